"""openai (Python) on the Responses API: plain, streamed, and parsed into a model."""
import json

from openai import OpenAI

from loop import Answer, serve

client = OpenAI()  # OPENAI_BASE_URL, OPENAI_API_KEY: the gateway


def plain(q):
    return json.loads(client.responses.create(model="any", input=q).output_text)


def stream(q):
    events = client.responses.create(model="any", input=q, stream=True)
    return json.loads("".join(e.delta for e in events if e.type == "response.output_text.delta"))


def structured(q):
    return client.responses.parse(model="any", input=q, text_format=Answer).output_parsed.model_dump()


serve({"plain": plain, "stream": stream, "structured": structured})
