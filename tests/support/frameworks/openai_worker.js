// openai (npm): chat completions, plain, streamed, a JSON schema response format, and a
// tool call.
const OpenAI = require('openai');
const { serve, lookup, LOOKUP_PARAMS, ANSWER } = require('./loop');

const client = new OpenAI(); // OPENAI_BASE_URL, OPENAI_API_KEY: the gateway
const user = (q) => [{ role: 'user', content: q }];
const LOOKUP = { type: 'function', function: { name: 'lookup', description: 'Look a word up.', parameters: LOOKUP_PARAMS } };

serve({
  plain: async (q) => JSON.parse((await client.chat.completions.create({ model: 'any', messages: user(q) })).choices[0].message.content),
  stream: async (q) => {
    let text = '';
    const chunks = await client.chat.completions.create({ model: 'any', messages: user(q), stream: true, stream_options: { include_usage: true } });
    for await (const ch of chunks) if (ch.choices.length) text += ch.choices[0].delta.content || '';
    return JSON.parse(text);
  },
  structured: async (q) => {
    const response_format = { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema: ANSWER } };
    const r = await client.chat.completions.create({ model: 'any', messages: user(q), response_format });
    return JSON.parse(r.choices[0].message.content);
  },
  tool: async (q) => {
    const messages = user(q);
    const m = (await client.chat.completions.create({ model: 'any', messages, tools: [LOOKUP] })).choices[0].message;
    const call = m.tool_calls[0];
    messages.push(m, { role: 'tool', tool_call_id: call.id, content: lookup(JSON.parse(call.function.arguments).q) });
    const r = await client.chat.completions.create({ model: 'any', messages, tools: [LOOKUP] });
    return JSON.parse(r.choices[0].message.content);
  },
});
