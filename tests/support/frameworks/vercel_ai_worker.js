// The Vercel AI SDK (`ai` with `@ai-sdk/openai` on the chat API): generateText, streamText,
// an object output, and a tool it calls itself.
const { generateText, streamText, Output, tool, jsonSchema, stepCountIs } = require('ai');
const { openai } = require('@ai-sdk/openai');
const { serve, lookup, LOOKUP_PARAMS, ANSWER } = require('./loop');

const model = openai.chat('any'); // OPENAI_BASE_URL, OPENAI_API_KEY: the gateway; openai('any') is the Responses API
const tools = { lookup: tool({ description: 'Look a word up.', inputSchema: jsonSchema(LOOKUP_PARAMS), execute: async ({ q }) => lookup(q) }) };

serve({
  plain: async (q) => JSON.parse((await generateText({ model, prompt: q })).text),
  stream: async (q) => {
    let text = '';
    for await (const d of streamText({ model, prompt: q }).textStream) text += d;
    return JSON.parse(text);
  },
  structured: async (q) => (await generateText({ model, prompt: q, output: Output.object({ schema: jsonSchema(ANSWER) }) })).output,
  tool: async (q) => JSON.parse((await generateText({ model, prompt: q, tools, stopWhen: stepCountIs(2) })).text),
});
