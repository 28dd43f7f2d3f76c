// @anthropic-ai/sdk (npm): Messages, plain, streamed, parsed against a JSON schema, and a
// tool use.
const Anthropic = require('@anthropic-ai/sdk');
const { jsonSchemaOutputFormat } = require('@anthropic-ai/sdk/helpers/json-schema');
const { serve, lookup, LOOKUP_PARAMS, ANSWER } = require('./loop');

const client = new Anthropic(); // ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY: the gateway
const ask = (q) => ({ model: 'any', max_tokens: 256, messages: [{ role: 'user', content: q }] });
const text = (m) => JSON.parse(m.content.filter((b) => b.type === 'text').map((b) => b.text).join(''));
const tools = [{ name: 'lookup', description: 'Look a word up.', input_schema: LOOKUP_PARAMS }];

serve({
  plain: async (q) => text(await client.messages.create(ask(q))),
  stream: async (q) => {
    let t = '';
    for await (const e of client.messages.stream(ask(q))) {
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') t += e.delta.text;
    }
    return JSON.parse(t);
  },
  structured: async (q) =>
    (await client.messages.parse({ ...ask(q), output_config: { format: jsonSchemaOutputFormat(ANSWER) } })).parsed_output,
  tool: async (q) => {
    const req = { ...ask(q), tools };
    const m = await client.messages.create(req);
    const use = m.content.find((b) => b.type === 'tool_use');
    req.messages.push(
      { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: lookup(use.input.q) }] },
    );
    return text(await client.messages.create(req));
  },
});
