// Mastra's side of benchmarks/vs_mastra.py (Memory Studio): one warm node process answering the benchmark's
// calls through the real @mastra/memory + @mastra/libsql / @mastra/pg of the corpus (run with the corpus folder as cwd).
// usage: node vs_mastra_worker.mjs STORE_URL
//   STORE_URL: file:/path.db or http://host:port (LibSQLStore), or postgresql://…?schema=NAME (PostgresStore,
//   schemaName NAME; the studio's own spelling of a PostgreSQL store)
// stdin, one JSON a line: {"op": NAME, "reps": N, "args": {...}}  ->  stdout: {"ms": [N timings], "cpu": [N CPU
// times], "out": result}
// Each timing covers the call alone (wall ms, and the process's CPU ms: process.cpuUsage, every thread, GC helpers
// included); "out" is the last call's result, normalised for comparison.
import { Memory } from '@mastra/memory';
import { ObservationalMemory, TokenCounter } from '@mastra/memory/processors';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { createScript } from './scripted-model.mjs';

const [url] = process.argv.slice(2);
async function makeStorage() {
  if (/^postgres(ql)?:/.test(url)) {
    const { PostgresStore } = await import('@mastra/pg');
    const u = new URL(url);
    const schemaName = u.searchParams.get('schema') ?? 'public';
    u.searchParams.delete('schema');
    return new PostgresStore({ id: 'vs-mastra', connectionString: u.toString(), schemaName });
  }
  const { LibSQLStore } = await import('@mastra/libsql');
  return new LibSQLStore({ id: 'vs-mastra', url });
}
const storage = await makeStorage();
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

// OM: the ObservationalMemory of a record's stored config, built as the corpus's oracle.mjs builds it (one per
// distinct config), and the threads an OM record governs, found once before any timing.
const oms = new Map();
function omFor(config) {
  const key = JSON.stringify(config);
  if (!oms.has(key)) {
    const cfg = typeof config === 'string' ? JSON.parse(config) : config;
    const o = cfg.observation, r = cfg.reflection;
    oms.set(key, new ObservationalMemory({
      storage: store, memory, scope: cfg.scope,
      model: typeof o.model === 'string' ? o.model : createScript({ seed: 1 }).model('observer'),
      observation: { messageTokens: o.messageTokens, bufferTokens: o.bufferTokens ?? false, ...(o.bufferTokens ? { bufferActivation: o.bufferActivation, blockAfter: o.blockAfter } : {}) },
      reflection: { observationTokens: r.observationTokens, ...(o.bufferTokens ? { bufferActivation: r.bufferActivation, blockAfter: r.blockAfter } : {}) },
    }));
  }
  return oms.get(key);
}
let omThreads = null;  // [{threadId, resourceId, om, lookupKey}] of every thread an OM record governs
async function governed() {
  if (!omThreads) {
    omThreads = [];
    for (const t of (await memory.listThreads({ perPage: false })).threads) {
      const rec = await store.getObservationalMemory(t.id, t.resourceId);
      if (rec) omThreads.push({ threadId: t.id, resourceId: t.resourceId, om: omFor(rec.config), lookupKey: rec.lookupKey ?? `thread:${t.id}` });
    }
  }
  return omThreads;
}
const statusRow = st => [st.pendingTokens, st.threshold, st.unbufferedPendingTokens, st.shouldObserve, st.shouldReflect,
  st.bufferedChunkCount, st.canActivate, st.record.id, st.record.generationCount, st.record.observationTokenCount];
async function statuses() {
  const out = {};
  for (const g of await governed()) out[g.threadId] = await g.om.getStatus({ threadId: g.threadId, resourceId: g.resourceId });
  return out;
}

const ops = {
  listThreads: async a => (await memory.listThreads({ perPage: a.perPage ?? false, page: a.page ?? 0, ...(a.metadata ? { filter: { metadata: a.metadata } } : {}) })),
  getThreadById: async a => memory.getThreadById({ threadId: a.threadId }),
  recall: async a => memory.recall({ threadId: a.threadId, perPage: a.perPage, page: a.page }),
  listMessages: async a => store.listMessages({ threadId: a.threadId, perPage: a.perPage, page: a.page, ...(a.orderBy ? { orderBy: a.orderBy } : {}) }),
  // getStatus of every thread an OM record governs
  statuses,
  // inspect's work: every thread, every OM thread's status, every record's history (newest 100 generations)
  inspect: async () => {
    const threads = (await memory.listThreads({ perPage: false })).threads;
    const st = await statuses();
    const history = {};
    for (const g of await governed()) {
      history[g.lookupKey] ??= await g.om.getHistory(g.threadId, g.resourceId, 100);
    }
    return { threads, st, history };
  },
};
const statusOut = st => Object.fromEntries(Object.entries(st).map(([id, s]) => [id, statusRow(s)]));
const outs = {
  listThreads: r => ({ threads: r.threads.map(thread), total: r.total, hasMore: r.hasMore }),
  getThreadById: thread,
  recall: page,
  listMessages: page,
  statuses: statusOut,
  inspect: r => ({
    threads: r.threads.map(t => t.id).sort(), statuses: statusOut(r.st),
    history: Object.fromEntries(Object.entries(r.history).map(([k, h]) => [k, h.map(g => [g.id, g.generationCount, g.observationTokenCount])])),
  }),
};

const cpuMs = c0 => { const d = process.cpuUsage(c0); return (d.user + d.system) / 1000; };

async function run({ op, reps, args }) {
  const ms = [], cpu = [];
  let out;
  if (op === 'estimateWarm' || op === 'estimateCold') {
    const messages = await messagesOf(args.threadId);
    if (op === 'estimateWarm' && !warm) { warm = structuredClone(messages); new TokenCounter().countMessages(warm); }
    for (let i = 0; i < reps; i++) {
      const input = op === 'estimateWarm' ? warm : structuredClone(messages);
      const c0 = process.cpuUsage(), t0 = performance.now();
      out = new TokenCounter().countMessages(input);
      ms.push(performance.now() - t0);
      cpu.push(cpuMs(c0));
    }
    return { ms, cpu, out };
  }
  if (op === 'statuses' || op === 'inspect') await governed();  // which threads OM governs: found before timing
  for (let i = 0; i < reps; i++) {
    const c0 = process.cpuUsage(), t0 = performance.now();
    const r = await ops[op](args);
    ms.push(performance.now() - t0);
    cpu.push(cpuMs(c0));
    out = r;
  }
  return { ms, cpu, out: outs[op](out) };
}

const lines = createInterface({ input: process.stdin });
process.stdout.write(JSON.stringify({ ready: true }) + '\n');
for await (const line of lines) {
  if (!line.trim()) continue;
  process.stdout.write(JSON.stringify(await run(JSON.parse(line))) + '\n');
}
process.exit(0);
