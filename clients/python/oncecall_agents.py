"""oncecall's tools for in-process voice agents in Python: Pipecat and LiveKit Agents.

Standard library only: copy this file next to your agent. Each tool of `oncecall tools export` posts the
model's arguments to oncecall's tool route (POST /v1/dasha/tools/{tool}, the definition's webhook URL) with
the session's call id, and hands oncecall's answer to the model, whose `say` tells it what it may tell the
caller. The idempotency key is not the tool call id: oncecall derives it from the call id and the
operation's identity fields (the customer and slot of a booking, ...). So when an interrupted turn
cancels a tool call and the model runs the tool again under a new tool call id, oncecall answers with
the action the first run made (docs/voice-platforms.md#in-process-agents).

    tools = Oncecall.from_file("tools.json", api_key=KEY, call_id=call_sid, framework="pipecat")

Pipecat:

    tools.register_pipecat(llm)   # llm.register_function(name, tools.pipecat_handler, ...) for each tool

register_pipecat registers every write with cancel_on_interruption=False: Pipecat runs it in the background,
the conversation goes on, and its result is injected into the context when the handler gives it. A write
oncecall answers pending (a provider slower than oncecall's budget) keeps asking check_action_status about
the same action and gives the settled answer, so the agent says the outcome when it is known.
    schema = ToolsSchema(standard_tools=[FunctionSchema(**s) for s in tools.function_schemas()])

LiveKit Agents (Python):

    agent_tools = [function_tool(tools.livekit_handler(s["name"]), raw_schema=s)
                   for s in tools.livekit_raw_schemas()]
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Sequence

__all__ = ["Oncecall", "OncecallRefusal", "Reply"]

# Answers that mean no answer came: the same call is sent again (it maps to the same action).
_RETRY_STATUSES = (429, 502, 503, 504)
_CALL_ID = re.compile(r"^[ -~]{1,200}$")
# oncecall's read-only tools: they answer at once, and a Pipecat interruption may cancel them.
_READ_ONLY = frozenset({
    "check_action_status", "find_available_slots", "find_customer", "get_customer", "list_appointments",
    "list_payment_intents", "list_practitioners", "list_services",
})


class OncecallRefusal(Exception):
    """oncecall refused a call before doing anything: a wrong key, an unknown tool, a malformed call."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"oncecall refused this call (HTTP {status}: {detail}); nothing was done.")
        self.status = status


@dataclass(frozen=True)
class Reply:
    """One answered tool call."""

    tool: str
    #: The model's id of this tool call; it names the invocation only, never the action.
    tool_call_id: str | None
    #: oncecall's answer: outcome (only "confirmed" means it happened), action_id, reason, say, details.
    answer: dict
    #: oncecall answered with an action an earlier call made (Idempotent-Replayed).
    replayed: bool


class Oncecall:
    """Calls oncecall's tools for one phone call (one Pipecat pipeline, one LiveKit session)."""

    def __init__(
        self,
        definitions: Sequence[Mapping[str, Any]],
        *,
        api_key: str,
        call_id: str,
        framework: str,
        caller: str | None = None,
        org_id: str | None = None,
        on_reply: Callable[[Reply], None] | None = None,
        urlopen: Callable[..., Any] = urllib.request.urlopen,
        late_wait_seconds: float = 300,
    ):
        """
        definitions: `oncecall tools export` (its JSON array, parsed).
        api_key: the tenant's API key (a key of scope dasha is enough).
        call_id: the phone call's id: the same for the whole call and different for every call (a
            telephony call id, a room made for the call). Sent as "<framework>:<call_id>", at most 200
            printable ASCII characters in all.
        framework: "pipecat" or "livekit": names the framework in the call id.
        caller: the caller's number in international form, when known (find_customer uses it).
        org_id: the tenant's Dasha orgId, if the tenant is bound to one.
        on_reply: called with every Reply, e.g. to log it.
        urlopen: urllib.request.urlopen or a function like it.
        late_wait_seconds: how long a write answered pending keeps asking for its outcome in the Pipecat
            handler; past it the model gets the last answer, still pending.
        """
        self._defs = {d["name"]: d for d in definitions}
        self._call_id = f"{framework}:{call_id}"
        if not call_id or not _CALL_ID.match(self._call_id):
            raise ValueError("call_id must be a non-empty id of at most 200 printable ASCII characters with its framework prefix")
        if not api_key:
            raise ValueError("api_key is required")
        self._api_key = api_key
        self._framework = framework
        self._caller = caller
        self._org_id = org_id or ""
        self._on_reply = on_reply
        self._urlopen = urlopen
        self._late_wait = late_wait_seconds

    @classmethod
    def from_file(cls, path: str, **kwargs: Any) -> "Oncecall":
        """Oncecall over the definitions in a file written by `oncecall tools export`."""
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f), **kwargs)

    @property
    def names(self) -> list[str]:
        return list(self._defs)

    def call(self, tool: str, arguments: Mapping[str, Any], tool_call_id: str | None = None) -> Reply:
        """Sends one tool call and returns oncecall's answer (blocking).

        A call that gets no answer (a lost connection, a 502/503/504, a timeout) is sent again with the
        same body, which oncecall maps to the same action; when no attempt is answered, the answer is the
        definition's fallBackResult (pending, never a success).
        """
        d = self._defs.get(tool)
        if d is None:
            raise OncecallRefusal(404, f"no oncecall tool named {tool}")
        payload = {
            "type": "ToolWebHookPayload",
            "status": "Running",
            "callId": self._call_id,
            "agentId": self._framework,
            "orgId": self._org_id,
            "toolName": tool,
            "arguments": dict(arguments),
            "callAdditionalData": {},
            "agentAdditionalData": {},
        }
        if self._caller:
            payload["endpoint"] = self._caller
        body = json.dumps(payload).encode()
        attempts = 1 + int(d.get("retryCount", 2))
        deadline = time.monotonic() + float(d.get("timeoutSeconds", 10))
        for attempt in range(1, attempts + 1):
            wait = 0.25 * 2 ** (attempt - 1)
            req = urllib.request.Request(
                d["webhook"]["url"],
                data=body,
                method="POST",
                headers={"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json"},
            )
            try:
                with self._urlopen(req, timeout=max(0.001, deadline - time.monotonic())) as res:
                    reply = Reply(tool, tool_call_id, json.load(res), res.headers.get("Idempotent-Replayed") == "true")
                if self._on_reply:
                    self._on_reply(reply)
                return reply
            except urllib.error.HTTPError as err:
                if err.code not in _RETRY_STATUSES:
                    raise OncecallRefusal(err.code, _problem(err)) from None
                retry_after = err.headers.get("Retry-After", "")
                if retry_after.isdigit() and int(retry_after) > 0:
                    wait = float(retry_after)
            except (urllib.error.URLError, TimeoutError, ConnectionError):
                pass  # no answer: the outcome is unknown, and a repeat maps to the same action
            if attempt == attempts or time.monotonic() + wait >= deadline:
                break
            time.sleep(wait)
        reply = Reply(tool, tool_call_id, dict(d["fallBackResult"]), False)
        if self._on_reply:
            self._on_reply(reply)
        return reply

    async def acall(self, tool: str, arguments: Mapping[str, Any], tool_call_id: str | None = None) -> Reply:
        """call in a worker thread. Cancelling it (an interruption) lets the request finish: the action it
        started is settled, and a re-run is answered with it."""
        return await asyncio.to_thread(self.call, tool, arguments, tool_call_id)

    def waits_for(self, reply: Reply) -> bool:
        """Whether a reply is a pending action whose outcome check_action_status can tell later."""
        a = reply.answer
        return (a.get("outcome") == "pending" and bool(a.get("action_id")) and a.get("reason") != "no_answer"
                and "check_action_status" in self._defs)

    async def settled(self, reply: Reply) -> Reply:
        """Asks check_action_status about a pending reply's action, a little apart (0.5 s doubling to 5 s),
        until it is no longer pending or late_wait_seconds pass, and returns the last reply. It sends
        nothing that could act again: the status tool only reads."""
        deadline = time.monotonic() + self._late_wait
        last, pause = reply, 0.5
        while time.monotonic() + pause < deadline:
            await asyncio.sleep(pause)
            status = await self.acall("check_action_status", {"action_id": reply.answer["action_id"]}, reply.tool_call_id)
            if status.answer.get("action_id") == reply.answer["action_id"]:
                last = Reply(reply.tool, reply.tool_call_id, status.answer, status.replayed)
            if last.answer.get("outcome") != "pending":
                break
            pause = min(2 * pause, 5.0)
        return last

    # Pipecat

    def function_schemas(self) -> list[dict]:
        """Each tool as the keyword arguments of Pipecat's FunctionSchema (name, description, properties,
        required): ToolsSchema(standard_tools=[FunctionSchema(**s) for s in tools.function_schemas()])."""
        return [
            {
                "name": d["name"],
                "description": d["description"],
                "properties": d["schema"].get("properties", {}),
                "required": list(d["schema"].get("required", [])),
            }
            for d in self._defs.values()
        ]

    async def pipecat_handler(self, params: Any) -> None:
        """A Pipecat function handler: takes FunctionCallParams (function_name, tool_call_id, arguments,
        result_callback) and gives oncecall's answer to result_callback. A write answered pending is
        answered when it settles (settled): registered with cancel_on_interruption=False, it runs in the
        background meanwhile, and Pipecat injects the settled answer into the context then."""
        reply = await self.acall(params.function_name, params.arguments, params.tool_call_id)
        if params.function_name not in _READ_ONLY and self.waits_for(reply):
            reply = await self.settled(reply)
        await params.result_callback(reply.answer)

    def register_pipecat(self, llm: Any, **kwargs: Any) -> None:
        """llm.register_function(name, self.pipecat_handler, **kwargs) for every tool; a write also with
        cancel_on_interruption=False (unless kwargs say otherwise), so that Pipecat runs it in the
        background and injects its result, the settled answer, when the handler gives it."""
        for name in self._defs:
            extra = {} if name in _READ_ONLY else {"cancel_on_interruption": False}
            llm.register_function(name, self.pipecat_handler, **{**extra, **kwargs})

    # LiveKit Agents (Python)

    def livekit_raw_schemas(self) -> list[dict]:
        """Each tool as LiveKit's raw function schema (type, name, description, parameters), for
        function_tool(tools.livekit_handler(s["name"]), raw_schema=s)."""
        return [
            {"type": "function", "name": d["name"], "description": d["description"], "parameters": d["schema"]}
            for d in self._defs.values()
        ]

    def livekit_handler(self, name: str) -> Callable[[dict, Any], Awaitable[str]]:
        """A LiveKit raw function tool for the tool named name: called with (raw_arguments, context), it
        returns oncecall's answer as JSON for the model."""
        if name not in self._defs:
            raise KeyError(name)

        async def handler(raw_arguments: dict, context: Any) -> str:
            call = getattr(context, "function_call", None)
            reply = await self.acall(name, raw_arguments, getattr(call, "call_id", None))
            return json.dumps(reply.answer)

        handler.__name__ = name
        return handler


def _problem(err: urllib.error.HTTPError) -> str:
    try:
        p = json.load(err)
        return str(p.get("detail") or p.get("title") or err.reason)
    except (ValueError, OSError):
        return str(err.reason)
