"""pydantic-ai: an agent on OpenAI's chat API, run, streamed, with a native output type,
and with a tool."""
import asyncio
import json

from pydantic_ai import Agent, NativeOutput
from openai import AsyncOpenAI
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from loop import Answer, lookup, serve



def model():
    """A model and client per run: each run_sync or asyncio.run has its own event loop.
    AsyncOpenAI() reads OPENAI_BASE_URL, OPENAI_API_KEY: the gateway."""
    return OpenAIChatModel("any", provider=OpenAIProvider(openai_client=AsyncOpenAI()))


def plain(q):
    return json.loads(Agent(model()).run_sync(q).output)


def stream(q):
    async def run():
        async with Agent(model()).run_stream(q) as r:
            return "".join([t async for t in r.stream_text(delta=True)])

    return json.loads(asyncio.run(run()))


def structured(q):
    return Agent(model(), output_type=NativeOutput(Answer)).run_sync(q).output.model_dump()


def tool(q):
    return json.loads(Agent(model(), tools=[lookup]).run_sync(q).output)


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
