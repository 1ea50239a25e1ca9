// Test helper (Memory Studio): what real Mastra's observer formatting and tokenx estimate give for the inputs
// of tests/engine/data/observer_format_expected.json (the data the studio's observer_format is compared with).
// usage: node studio-observer-format.mjs INPUT_JSON OUT_JSON   (time zone forced to UTC)
// INPUT_JSON: {fixtures: {name: path of a private copy}, synthetic: [{name, messages}],
//              syntheticContext: [{name, threads: [[threadId, messages]], currents: [threadId]}], tokenx: [text]}
// OUT_JSON:   the same shape as observer_format_expected.json without its _header:
//   fixtures.<name>.threads.<id> = {resourceId, messageIds, maxPartLength500, full}: formatMessagesForObserver of
//     LibSQLStore listMessages({threadId, perPage: false, orderBy: createdAt ASC}), with {maxPartLength: 500} and without;
//   fixtures.<name>.resources.<rid> = {threadOrder, otherThreadsContext: {current: block or null}}:
//     ObservationalMemory#formatUnobservedContextBlocks(Map(threadOrder -> all messages), current);
//   synthetic / syntheticContext: the same calls on the hand-made messages; tokenx: [text, TokenCounter.countString(text)].
process.env.TZ = 'UTC';
import { LibSQLStore } from '@mastra/libsql';
import { Memory } from '@mastra/memory';
import { ObservationalMemory, TokenCounter, formatMessagesForObserver } from '@mastra/memory/processors';
import { readFileSync, writeFileSync } from 'node:fs';
import { createScript } from './scripted-model.mjs';

const [inputFile, outFile] = process.argv.slice(2);
const input = JSON.parse(readFileSync(inputFile, 'utf8'));
const out = { fixtures: {}, synthetic: [], syntheticContext: [], tokenx: [] };
const both = messages => ({ maxPartLength500: formatMessagesForObserver(messages, { maxPartLength: 500 }),
  full: formatMessagesForObserver(messages) });

let om = null;
const context = async (storage, memory, byThread, current) => {
  om ??= new ObservationalMemory({ storage: storage.stores.memory, memory, model: createScript({ seed: 1 }).model('observer') });
  return (await om.formatUnobservedContextBlocks(byThread, current)) || null;
};

let lastStorage = null, lastMemory = null;
for (const [name, file] of Object.entries(input.fixtures)) {
  const storage = new LibSQLStore({ id: 'studio-observer-format', url: `file:${file}` });
  await storage.init();
  const memory = new Memory({ storage, options: { lastMessages: 10 } });
  lastStorage = storage; lastMemory = memory; om = null;
  const store = storage.stores.memory;
  const { threads } = await store.listThreads({ perPage: false, orderBy: { field: 'createdAt', direction: 'ASC' } });
  const ids = threads.map(t => t.id).sort();
  const byId = Object.fromEntries(threads.map(t => [t.id, t]));
  const messagesOf = {};
  const entry = { threads: {}, resources: {} };
  for (const id of ids) {
    const { messages } = await store.listMessages({ threadId: id, perPage: false, orderBy: { field: 'createdAt', direction: 'ASC' } });
    messagesOf[id] = messages;
    entry.threads[id] = { resourceId: byId[id].resourceId, messageIds: messages.map(m => m.id), ...both(messages) };
  }
  for (const rid of [...new Set(ids.map(id => byId[id].resourceId))].sort()) {
    const threadOrder = ids.filter(id => byId[id].resourceId === rid);
    const byThread = new Map(threadOrder.map(id => [id, messagesOf[id]]));
    const blocks = {};
    for (const current of threadOrder) blocks[current] = await context(storage, memory, byThread, current);
    entry.resources[rid] = { threadOrder, otherThreadsContext: blocks };
  }
  out.fixtures[name] = entry;
}
for (const c of input.synthetic) out.synthetic.push({ name: c.name, messages: c.messages, ...both(c.messages) });
for (const c of input.syntheticContext) {
  const byThread = new Map(c.threads);
  const expected = {};
  for (const current of c.currents) expected[current] = await context(lastStorage, lastMemory, byThread, current);
  out.syntheticContext.push({ name: c.name, threads: c.threads, expected });
}
const tc = new TokenCounter();
for (const text of input.tokenx) out.tokenx.push([text, tc.countString(text)]);
writeFileSync(outFile, JSON.stringify(out));
console.log(JSON.stringify({ ok: true }));
process.exit(0);
