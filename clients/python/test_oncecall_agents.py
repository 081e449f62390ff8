"""Tests of oncecall_agents against a live oncecall, with the call shapes Pipecat and LiveKit Agents
(Python) publish: Pipecat's FunctionCallParams and its cancel-on-interruption, LiveKit's raw function tool
(raw_arguments, context.function_call.call_id). Neither framework is installed: stand-ins carry exactly
the fields the handlers read.

A Go test (TestPythonAgentModule in api/) starts oncecall, makes a tenant with a customer and two free
slots, exports the tool definitions, and runs `python3 -m unittest -v` here with:
    ONCECALL_KEY        the tenant's API key
    ONCECALL_TOOLS      the path of the exported definitions
    ONCECALL_CUSTOMER   a customer id
    ONCECALL_SLOTS      two free slot ids, comma-separated
and then counts the rows the calls made.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import unittest
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

from oncecall_agents import Oncecall, OncecallRefusal, Reply


def env(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        raise unittest.SkipTest(f"{name} is not set: run these tests through TestPythonAgentModule")
    return v


@dataclass
class FunctionCallParams:
    """Pipecat's FunctionCallParams (pipecat.services.llm_service), as its docs publish it."""

    function_name: str
    tool_call_id: str
    arguments: Mapping[str, Any]
    llm: Any
    pipeline_worker: Any
    context: Any
    result_callback: Callable[..., Awaitable[None]]
    app_resources: Any = None
    worker_runner: Any = None


@dataclass
class FunctionCall:
    """LiveKit's llm.FunctionCall: the part a raw function tool's context carries."""

    call_id: str
    name: str
    arguments: str


@dataclass
class RunContext:
    """LiveKit's RunContext: the part a raw function tool reads."""

    function_call: FunctionCall


class PipecatInterruption(unittest.IsolatedAsyncioTestCase):
    """Pipecat cancels a function call when the user interrupts (register_function's default
    cancel_on_interruption=True): the handler's task is cancelled and its result never reaches the
    context, so the model runs the tool again under a new tool_call_id. oncecall answers the re-run with
    the first run's booking: one appointment (the Go test counts the rows)."""

    async def test_interrupted_booking_rerun_books_once(self):
        key, tools_path, customer = env("ONCECALL_KEY"), env("ONCECALL_TOOLS"), env("ONCECALL_CUSTOMER")
        slot = env("ONCECALL_SLOTS").split(",")[0]

        # The first booking's answer arrives only after the interruption cancelled its handler.
        answered, release = threading.Event(), threading.Event()
        calls = []

        def slow_first_answer(req, timeout):
            res = urllib.request.urlopen(req, timeout=timeout)
            calls.append(req)
            if len(calls) == 1:
                answered.set()
                release.wait(10)
            return res

        replies: list[Reply] = []
        tools = Oncecall.from_file(tools_path, api_key=key, call_id="pipecat-interrupted", framework="pipecat",
                                   on_reply=replies.append, urlopen=slow_first_answer)
        registered = {}

        class LLM:  # Pipecat's LLMService.register_function, as far as register_pipecat uses it
            def register_function(self, name, handler, **kwargs):
                registered[name] = handler

        tools.register_pipecat(LLM())
        self.assertIn("book_appointment", registered)

        results: dict[str, Any] = {}

        def params(tool_call_id: str) -> FunctionCallParams:
            async def result_callback(result, *, properties=None):
                results[tool_call_id] = result
            return FunctionCallParams("book_appointment", tool_call_id, {"customer_id": customer, "slot_id": slot},
                                      llm=None, pipeline_worker=None, context=None, result_callback=result_callback)

        first = asyncio.create_task(registered["book_appointment"](params("call_first")))
        await asyncio.to_thread(answered.wait, 10)  # oncecall has booked; the handler has not returned
        first.cancel()  # the user interrupts
        with self.assertRaises(asyncio.CancelledError):
            await first
        release.set()
        self.assertNotIn("call_first", results, "a cancelled call's result never reaches the context")

        await registered["book_appointment"](params("call_rerun"))  # the model runs the tool again
        rerun = results["call_rerun"]
        self.assertEqual(rerun["outcome"], "confirmed", rerun["say"])
        # The first run's reply, made in its thread after the cancellation, names the same action.
        for _ in range(100):
            if len(replies) == 2:
                break
            await asyncio.sleep(0.05)
        by_call = {r.tool_call_id: r for r in replies}
        self.assertEqual(by_call["call_first"].answer["action_id"], rerun["action_id"])
        self.assertTrue(by_call["call_rerun"].replayed, "the re-run is answered with the first run's action")


class LiveKitRawTools(unittest.IsolatedAsyncioTestCase):
    """LiveKit Agents (Python): raw function tools over the same definitions; a call keeps its per-call
    actions, whatever the tool call id."""

    async def test_call_id_not_tool_call_id_is_the_identity(self):
        key, tools_path, customer = env("ONCECALL_KEY"), env("ONCECALL_TOOLS"), env("ONCECALL_CUSTOMER")

        def session(call_id: str) -> Oncecall:
            return Oncecall.from_file(tools_path, api_key=key, call_id=call_id, framework="livekit")

        schemas = {s["name"]: s for s in session("x").livekit_raw_schemas()}
        self.assertEqual(set(schemas["add_customer_note"]), {"type", "name", "description", "parameters"})
        self.assertEqual(schemas["add_customer_note"]["parameters"]["type"], "object")

        note = {"customer_id": customer, "text": "Prefers mornings.", "note_ref": "pref"}

        async def run(s: Oncecall, call_id: str) -> dict:
            handler = s.livekit_handler("add_customer_note")
            return json.loads(await handler(dict(note), RunContext(FunctionCall(call_id, "add_customer_note", json.dumps(note)))))

        room_a = session("room-a")
        a1 = await run(room_a, "call_1")
        a2 = await run(room_a, "call_2")
        b1 = await run(session("room-b"), "call_1")
        self.assertEqual(a1["outcome"], "confirmed", a1["say"])
        self.assertEqual(a2["action_id"], a1["action_id"], "the same note in one call, under another tool call id")
        self.assertNotEqual(b1["action_id"], a1["action_id"], "the same tool call id in another call is another note")


class Answers(unittest.TestCase):
    """What the model gets when oncecall cannot answer, or refuses."""

    def test_no_answer_is_pending_and_a_refusal_raises(self):
        key, tools_path, customer = env("ONCECALL_KEY"), env("ONCECALL_TOOLS"), env("ONCECALL_CUSTOMER")
        slot = env("ONCECALL_SLOTS").split(",")[1]

        def unreachable(req, timeout):
            raise urllib.error.URLError("connection refused")

        lost = Oncecall.from_file(tools_path, api_key=key, call_id="lost", framework="pipecat", urlopen=unreachable)
        reply = lost.call("book_appointment", {"customer_id": customer, "slot_id": slot})
        self.assertEqual((reply.answer["outcome"], reply.answer["reason"]), ("pending", "no_answer"))

        wrong = Oncecall.from_file(tools_path, api_key="oc_wrong", call_id="refused", framework="pipecat")
        with self.assertRaises(OncecallRefusal) as refused:
            wrong.call("find_customer", {})
        self.assertEqual(refused.exception.status, 401)

    def test_schemas_have_the_shapes_the_frameworks_take(self):
        tools = Oncecall.from_file(env("ONCECALL_TOOLS"), api_key="k", call_id="c", framework="pipecat")
        for s in tools.function_schemas():  # FunctionSchema(name, description, properties, required)
            self.assertEqual(set(s), {"name", "description", "properties", "required"})
        with self.assertRaises(ValueError):
            Oncecall([], api_key="k", call_id="x" * 200, framework="pipecat")


if __name__ == "__main__":
    unittest.main()
