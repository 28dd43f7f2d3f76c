"""anthropic: Messages, plain, streamed, parsed into a model, and a tool use."""
import json

import anthropic

from loop import Answer, lookup, serve, user

client = anthropic.Anthropic()  # ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY: the gateway
TOOL = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def text(r):
    return json.loads("".join(b.text for b in r.content if b.type == "text"))


def plain(q):
    return text(client.messages.create(model="any", max_tokens=256, messages=user(q)))


def stream(q):
    with client.messages.stream(model="any", max_tokens=256, messages=user(q)) as s:
        return json.loads("".join(s.text_stream))


def structured(q):
    r = client.messages.parse(model="any", max_tokens=256, messages=user(q), output_format=Answer)
    return r.parsed_output.model_dump()


def tool(q):
    msgs = user(q)
    r = client.messages.create(model="any", max_tokens=256, messages=msgs, tools=[TOOL])
    use = next(b for b in r.content if b.type == "tool_use")
    msgs += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": lookup(**use.input)}]},
    ]
    return text(client.messages.create(model="any", max_tokens=256, messages=msgs, tools=[TOOL]))


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
