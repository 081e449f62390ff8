"""A Pipecat write that settles after oncecall answered it pending is injected and spoken, with the call
shapes Pipecat publishes: register_function(name, handler, cancel_on_interruption=False) runs the handler
in the background while the conversation goes on, and what it gives result_callback is injected into the
context, and the LLM runs on it. Pipecat is not installed: stand-ins carry exactly the fields the handler
reads.

A Go test (TestPythonLateResult in api/) starts oncecall with a calendar slower than oncecall's budget, so
the booking is answered pending, and runs `python3 -m unittest -v test_late_results` here with
ONCECALL_KEY, ONCECALL_TOOLS, ONCECALL_CUSTOMER and ONCECALL_SLOTS (one slot); it then counts one action
and one write at the calendar.
"""

from __future__ import annotations

import asyncio
import json
import unittest
from typing import Any

from oncecall_agents import Oncecall, Reply
from test_oncecall_agents import FunctionCallParams, env


class PipecatLateResult(unittest.IsolatedAsyncioTestCase):
    async def test_booking_settling_after_pending_is_spoken(self):
        key, tools_path, customer = env("ONCECALL_KEY"), env("ONCECALL_TOOLS"), env("ONCECALL_CUSTOMER")
        slot = env("ONCECALL_SLOTS")
        replies: list[Reply] = []
        tools = Oncecall.from_file(tools_path, api_key=key, call_id="pipecat-late", framework="pipecat",
                                   on_reply=replies.append)
        registered: dict[str, tuple[Any, dict]] = {}

        class LLM:  # Pipecat's LLMService.register_function, as far as register_pipecat uses it
            def register_function(self, name, handler, **kwargs):
                registered[name] = (handler, kwargs)

        tools.register_pipecat(LLM())
        handler, options = registered["book_appointment"]
        self.assertIs(options.get("cancel_on_interruption"), False, "a write runs in the background")
        self.assertNotIn("cancel_on_interruption", registered["check_action_status"][1], "a read keeps the default")

        # The pipeline: what the handler gives result_callback is injected into the context, and the LLM
        # (scripted) speaks what the answer's outcome allows.
        context: list[dict] = []
        spoken: list[str] = []

        async def result_callback(result, *, properties=None):
            context.append({"role": "tool", "tool_call_id": "call_book", "content": json.dumps(result)})
            spoken.append("Your appointment is booked." if result["outcome"] == "confirmed" else "It is not confirmed yet.")

        task = asyncio.create_task(handler(FunctionCallParams(
            "book_appointment", "call_book", {"customer_id": customer, "slot_id": slot},
            llm=None, pipeline_worker=None, context=None, result_callback=result_callback)))
        for _ in range(200):  # oncecall answers the booking pending within its budget
            if replies:
                break
            await asyncio.sleep(0.05)
        self.assertEqual(replies[0].answer["outcome"], "pending", replies[0].answer["say"])
        self.assertFalse(task.done(), "the write goes on in the background")
        self.assertEqual(spoken, [], "nothing is said as confirmed before it settles")

        # The caller speaks meanwhile: with cancel_on_interruption=False Pipecat does not cancel the call.
        await asyncio.wait_for(task, 60)
        self.assertEqual(spoken, ["Your appointment is booked."])
        self.assertEqual(json.loads(context[-1]["content"])["outcome"], "confirmed")
        ids = {r.answer["action_id"] for r in replies}
        self.assertEqual(ids, {replies[0].answer["action_id"]}, "one action throughout")


if __name__ == "__main__":
    unittest.main()
