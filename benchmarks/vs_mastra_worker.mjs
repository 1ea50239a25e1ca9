// Mastra's side of benchmarks/vs_mastra.py (Memory Studio): one warm node process answering the benchmark's
// calls through the real @mastra/memory + @mastra/libsql of the corpus (run with the corpus folder as cwd).
// usage: node vs_mastra_worker.mjs STORE_URL     (file:/path.db or http://host:port of a libSQL server)
// stdin, one JSON a line: {"op": NAME, "reps": N, "args": {...}}  ->  stdout: {"ms": [N timings], "out": result}
// Each timing covers the call alone; "out" is the last call's result, normalised for comparison.
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { TokenCounter } from '@mastra/memory/processors';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';

const [url] = process.argv.slice(2);
const storage = new LibSQLStore({ id: 'vs-mastra', url });
const memory = new Memory({ storage, options: { lastMessages: 10 } });
await storage.init();
const store = storage.stores.memory;
const iso = d => (d instanceof Date ? d.toISOString() : d);
const thread = t => t && [t.id, t.resourceId, t.title ?? null, t.metadata ?? null, iso(t.createdAt), iso(t.updatedAt)];
const page = r => ({ ids: r.messages.map(m => m.id), total: r.total, hasMore: r.hasMore });
const loaded = {};  // thread id -> its messages as recall returns them (every one, oldest first)
async function messagesOf(threadId) {
  loaded[threadId] ??= (await memory.recall({ threadId, perPage: false })).messages;
  return loaded[threadId];
}
let warm = null;  // the messages of the warm estimate: stamped by a first count, as Mastra leaves them

const ops = {
  listThreads: async a => (await memory.listThreads({ perPage: false, ...(a.metadata ? { filter: { metadata: a.metadata } } : {}) })),
  getThreadById: async a => memory.getThreadById({ threadId: a.threadId }),
  recall: async a => memory.recall({ threadId: a.threadId, perPage: a.perPage }),
  listMessages: async a => store.listMessages({ threadId: a.threadId, perPage: a.perPage, page: a.page }),
};
const outs = {
  listThreads: r => ({ threads: r.threads.map(thread), total: r.total }),
  getThreadById: thread,
  recall: page,
  listMessages: page,
};

async function run({ op, reps, args }) {
  const ms = [];
  let out;
  if (op === 'estimateWarm' || op === 'estimateCold') {
    const messages = await messagesOf(args.threadId);
    if (op === 'estimateWarm' && !warm) { warm = structuredClone(messages); new TokenCounter().countMessages(warm); }
    for (let i = 0; i < reps; i++) {
      const input = op === 'estimateWarm' ? warm : structuredClone(messages);
      const t0 = performance.now();
      out = new TokenCounter().countMessages(input);
      ms.push(performance.now() - t0);
    }
    return { ms, out };
  }
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const r = await ops[op](args);
    ms.push(performance.now() - t0);
    out = r;
  }
  return { ms, out: outs[op](out) };
}

const lines = createInterface({ input: process.stdin });
process.stdout.write(JSON.stringify({ ready: true }) + '\n');
for await (const line of lines) {
  if (!line.trim()) continue;
  process.stdout.write(JSON.stringify(await run(JSON.parse(line))) + '\n');
}
process.exit(0);
