"""openai-agents: an agent on the chat completions API, run, streamed, with an output type,
and with a function tool."""
import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI

from loop import Answer, lookup, serve



def model():
    """A client per run: each run_sync or asyncio.run has its own event loop."""
    return OpenAIChatCompletionsModel(model="any", openai_client=AsyncOpenAI())


def plain(q):
    return json.loads(Runner.run_sync(Agent(name="a", model=model()), q).final_output)


def stream(q):
    async def run():
        r = Runner.run_streamed(Agent(name="a", model=model()), q)
        async for _ in r.stream_events():
            pass
        return r.final_output

    return json.loads(asyncio.run(run()))


def structured(q):
    return Runner.run_sync(Agent(name="a", model=model(), output_type=Answer), q).final_output.model_dump()


def tool(q):
    agent = Agent(name="a", model=model(), tools=[function_tool(lookup)])
    return json.loads(Runner.run_sync(agent, q).final_output)


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
