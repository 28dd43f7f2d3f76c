"""openai (Python): chat completions, plain, streamed, parsed into a model, and a tool call."""
import json

from openai import OpenAI

from loop import LOOKUP, Answer, lookup, serve, user

client = OpenAI()  # OPENAI_BASE_URL, OPENAI_API_KEY: the gateway


def plain(q):
    r = client.chat.completions.create(model="any", messages=user(q))
    return json.loads(r.choices[0].message.content)


def stream(q):
    chunks = client.chat.completions.create(
        model="any", messages=user(q), stream=True, stream_options={"include_usage": True}
    )
    return json.loads("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))


def structured(q):
    r = client.chat.completions.parse(model="any", messages=user(q), response_format=Answer)
    return r.choices[0].message.parsed.model_dump()


def tool(q):
    msgs = user(q)
    m = client.chat.completions.create(model="any", messages=msgs, tools=[LOOKUP]).choices[0].message
    call = m.tool_calls[0]
    msgs += [
        m.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": lookup(**json.loads(call.function.arguments))},
    ]
    r = client.chat.completions.create(model="any", messages=msgs, tools=[LOOKUP])
    return json.loads(r.choices[0].message.content)


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
