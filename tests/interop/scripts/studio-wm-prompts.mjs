// Test helper (Memory Studio): real Mastra agents with working memory on, driven by the corpus's scripted model,
// the working memory changed between turns with Memory.updateWorkingMemory, so a prompt log (MC_PROMPT_LOG) shows
// which value each turn's model got while the rows keep only the newest one. No observational memory.
// usage: node --import ./clock.mjs studio-wm-prompts.mjs DB [--store file|pg|libsql-remote --url URL]
//   DB: the .db file (file), the schema (pg), or the sqld URL (libsql-remote); it is emptied first.
// Three setups (each its own resource):
//   wm-erin: resource scope, a markdown template; wm-r1 two turns, v1 written, two turns; wm-r2 one turn, v2 written,
//            two turns (only wm-r2's last two turns saw the stored value);
//   wm-tom:  thread scope; wm-t1 one turn, its value written, two turns; wm-t2 (same resource) two turns, no value;
//   wm-json: resource scope with a JSON schema; wm-j1 one turn, a JSON value written, two turns.
// Prints {ok, turns}.
import { Agent } from '@mastra/core/agent';
import { Memory } from '@mastra/memory';
import { z } from 'zod';
import { createScript } from './scripted-model.mjs';
import { splitArgs, target, loadStore, makeStorage, resetTarget, initTarget } from './stores.mjs';
import { rmSync } from 'node:fs';

const { pos: [db], store, url } = splitArgs(process.argv.slice(2));
await loadStore(store);
const t = target(store, url, db);
if (store === 'file') for (const suffix of ['', '-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true });
else await resetTarget(t);
await initTarget(t);
const storage = makeStorage(t, 'studio-wm');
await storage.init();

const s = createScript({ seed: 7 });
let turns = 0;
async function talk(agent, resource, thread, n) {
  for (let i = 0; i < n; i++, turns++) {
    await agent.generate(s.question(turns, s.pick(s.TOPICS), resource), { memory: { resource, thread: { id: thread, title: `Thread ${thread}` } } });
  }
}
function agentWith(id, workingMemory) {
  const memory = new Memory({ storage, options: { lastMessages: 10, workingMemory } });
  return { memory, agent: new Agent({ id, name: id, instructions: 'Be helpful.', model: s.model('main'), memory }) };
}

const template = '# Trip\n- Destination:\n- Budget:\n- Travellers:\n';
const res = agentWith('wm-res', { enabled: true, scope: 'resource', template });
await talk(res.agent, 'wm-erin', 'wm-r1', 2);
await res.memory.updateWorkingMemory({ threadId: 'wm-r1', resourceId: 'wm-erin', workingMemory: '# Trip\n- Destination: Lisbon\n- Budget: $8000\n- Travellers:\n' });
await talk(res.agent, 'wm-erin', 'wm-r1', 2);
await talk(res.agent, 'wm-erin', 'wm-r2', 1);
await res.memory.updateWorkingMemory({ threadId: 'wm-r2', resourceId: 'wm-erin', workingMemory: '# Trip\n- Destination: Porto\n- Budget: $6500\n- Travellers: 2 (Ana, Björn)\n' });
await talk(res.agent, 'wm-erin', 'wm-r2', 2);

const thr = agentWith('wm-thread', { enabled: true, scope: 'thread', template: '# Task\n- Goal:\n- Deadline:\n' });
await talk(thr.agent, 'wm-tom', 'wm-t1', 1);
await thr.memory.updateWorkingMemory({ threadId: 'wm-t1', resourceId: 'wm-tom', workingMemory: '# Task\n- Goal: index the orders table\n- Deadline: Friday\n' });
await talk(thr.agent, 'wm-tom', 'wm-t1', 2);
await talk(thr.agent, 'wm-tom', 'wm-t2', 2);

const schema = z.object({ name: z.string().optional(), city: z.string().optional(), pets: z.array(z.string()).optional() });
const json = agentWith('wm-json', { enabled: true, scope: 'resource', schema });
await talk(json.agent, 'wm-json', 'wm-j1', 1);
await json.memory.updateWorkingMemory({ threadId: 'wm-j1', resourceId: 'wm-json', workingMemory: JSON.stringify({ name: 'Ana', city: 'Porto', pets: ['cat'] }) });
await talk(json.agent, 'wm-json', 'wm-j1', 2);

console.log(JSON.stringify({ ok: true, turns }));
process.exit(0);
