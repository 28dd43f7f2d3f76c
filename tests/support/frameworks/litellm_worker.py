"""litellm: completion through the `openai/` route, plain, streamed, with a response format,
and with a tool."""
import json

import litellm

from loop import LOOKUP, Answer, lookup, serve, user

MODEL = "openai/any"  # the openai route reads OPENAI_BASE_URL, OPENAI_API_KEY: the gateway


def content(r):
    return json.loads(r.choices[0].message.content)


def plain(q):
    return content(litellm.completion(model=MODEL, messages=user(q)))


def stream(q):
    chunks = litellm.completion(model=MODEL, messages=user(q), stream=True)
    return json.loads("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))


def structured(q):
    return content(litellm.completion(model=MODEL, messages=user(q), response_format=Answer))


def tool(q):
    msgs = user(q)
    m = litellm.completion(model=MODEL, messages=msgs, tools=[LOOKUP]).choices[0].message
    call = m.tool_calls[0]
    msgs += [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": lookup(**json.loads(call.function.arguments))},
    ]
    return content(litellm.completion(model=MODEL, messages=msgs, tools=[LOOKUP]))


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
