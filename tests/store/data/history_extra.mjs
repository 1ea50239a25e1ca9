// Records more listThreads / listMessages / recall results of real Mastra than the fixture oracles hold:
// paging edges, explicit orderBy, exclusive date bounds, storage-level include, rejected filters.
// usage: copy this file into a folder with the mastra-corpus node_modules (node resolves its imports from
// where the script lies; the interop tests' npm install in ~/.cache/memory-studio/mastra-corpus-*, see
// tests/interop/conftest.py install_corpus, will do) and run it there:
//   node history_extra.mjs ../shared/fixtures/mastra tests/store/data/history_extra.json   (absolute paths)
// Run it again whenever the fixtures are regenerated: test_history_parity checks the file names their ids.
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { copyFileSync, writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [fixtures, out] = process.argv.slice(2);
const result = {};
const ids = ms => ms.map(m => m.id);
async function attempt(fn) {
  try { return await fn(); } catch (e) { return { error: String(e.message || e) }; }
}
for (const name of ['support', 'collab', 'history']) {
  const dir = mkdtempSync(join(tmpdir(), 'hx-'));
  const file = join(dir, 'copy.db');
  copyFileSync(join(fixtures, name + '.db'), file);
  for (const ext of ['-wal', '-shm']) if (existsSync(join(fixtures, name + '.db' + ext))) copyFileSync(join(fixtures, name + '.db' + ext), file + ext);
  const storage = new LibSQLStore({ id: 'hx', url: `file:${file}` });
  await storage.init();
  const memory = new Memory({ storage, options: { lastMessages: 10 } });
  const store = await storage.getStore('memory');
  const threads = [];
  const threadCases = [
    {}, { perPage: 0 }, { page: 1, perPage: 1 }, { page: 5, perPage: 2 }, { orderBy: { field: 'createdAt', direction: 'ASC' } },
    { orderBy: { field: 'updatedAt', direction: 'DESC' }, perPage: 2, page: 1 },
    { filter: { metadata: { priority: 3.5 } }, perPage: false }, { filter: { metadata: { escalated: false } }, perPage: false },
    { filter: { metadata: { category: 'billing', priority: 2 } } }, { filter: { metadata: {} } },
    { filter: { metadata: { 'bad-key': 1 } } }, { filter: { metadata: { nested: { a: 1 } } } }, { perPage: false, page: 1 },
  ];
  for (const args of threadCases) {
    const r = await attempt(() => memory.listThreads(args));
    threads.push({ args, ...(r.error ? { error: r.error } : { threadIds: ids(r.threads), total: r.total, hasMore: r.hasMore }) });
  }
  const perThread = {};
  const rows = (await storage.stores.memory.listThreads({ perPage: false })).threads.map(t => t.id).sort();
  for (const threadId of rows) {
    const all = (await memory.recall({ threadId, perPage: false })).messages;
    const cases = [];
    const push = async (kind, args, fn) => {
      const r = await attempt(fn);
      cases.push({ kind, args, ...(r.error ? { error: r.error } : { messageIds: ids(r.messages), total: r.total, hasMore: r.hasMore }) });
    };
    const recallCases = [
      { page: 2, perPage: 2 }, { perPage: 0 }, { page: 0, perPage: 4, orderBy: { field: 'createdAt', direction: 'DESC' } },
      { page: 1, perPage: 4, orderBy: { field: 'createdAt', direction: 'ASC' } }, { page: 1 },
      { filter: { metadata: {} }, perPage: 3 }, { filter: { metadata: { category: 'billing' } }, perPage: 2 },
      { filter: { metadata: { category: 'billing' } }, perPage: 2, page: 1 },
      { filter: { metadata: { priority: Infinity } } }, { filter: { metadata: { __proto__x: 1, constructor: 1 } } },
      { filter: { metadata: { list: [1] } } }, { filter: { metadata: { ['k'.repeat(129)]: 1 } } },
    ];
    if (all.length >= 4) {
      const start = all[1].createdAt, end = all[all.length - 2].createdAt;
      recallCases.push({ perPage: false, filter: { dateRange: { start: start.toISOString(), end: end.toISOString(), startExclusive: true, endExclusive: true } } });
      recallCases.push({ perPage: 3, filter: { dateRange: { start: start.toISOString() } } });
    }
    for (const args of recallCases) await push('recall', args, () => memory.recall({ threadId, ...args }));
    if (all.length >= 4) {
      const mid = all[Math.floor(all.length / 2)], first = all[0], last = all[all.length - 1];
      const storageCases = [
        { include: [{ id: mid.id, withPreviousMessages: 2, withNextMessages: 1 }], perPage: 2 },
        { include: [{ id: mid.id, withPreviousMessages: 1 }, { id: first.id, withNextMessages: 2 }], perPage: 1, page: 1 },
        { include: [{ id: last.id, withPreviousMessages: 3 }], perPage: 0 },
        { include: [{ id: mid.id, withNextMessages: 2 }], perPage: 0 },
        { include: [{ id: mid.id }], perPage: 3, orderBy: { field: 'createdAt', direction: 'DESC' } },
        { include: [{ id: 'no-such-message', withPreviousMessages: 1 }], perPage: 2 },
        {}, { perPage: false }, { page: 1, perPage: 5 },
      ];
      for (const args of storageCases) await push('listMessages', args, () => store.listMessages({ threadId, ...args }));
    }
    perThread[threadId] = cases;
  }
  result[name] = { listThreads: threads, threads: perThread };
}
// Infinity is not JSON: written as {"$number": "Infinity"}.
// System messages and system reminders: stored rows recall counts in `total` but leaves out of `messages`.
{
  const dir = mkdtempSync(join(tmpdir(), 'hx-'));
  const file = join(dir, 'copy.db');
  copyFileSync(join(fixtures, 'support.db'), file);
  for (const ext of ['-wal', '-shm']) if (existsSync(join(fixtures, 'support.db' + ext))) copyFileSync(join(fixtures, 'support.db' + ext), file + ext);
  const storage = new LibSQLStore({ id: 'hx', url: `file:${file}` });
  await storage.init();
  const memory = new Memory({ storage, options: { lastMessages: 10 } });
  const text = t => JSON.stringify({ format: 2, parts: [{ type: 'text', text: t }], content: t });
  const inserted = [
    { id: 'sys-1', role: 'system', createdAt: '2026-03-01T12:00:00.000Z', content: text('You are helpful.') },
    { id: 'rem-1', role: 'user', createdAt: '2026-03-02T12:00:00.000Z', content: text('<system-reminder>Be brief.</system-reminder>') },
    { id: 'rem-2', role: 'user', createdAt: '2026-03-03T12:00:00.000Z', content: JSON.stringify({ format: 2, parts: [{ type: 'text', text: 'note' }], metadata: { systemReminder: { kind: 'x' } } }) },
    { id: 'rem-3', role: 'user', createdAt: '2026-03-04T12:00:00.000Z', content: JSON.stringify({ format: 2, parts: [{ type: 'text', text: 'legacy' }], metadata: { dynamicAgentsMdReminder: true } }) },
  ];
  const { createClient } = await import('@libsql/client');
  const raw = createClient({ url: `file:${file}` });
  for (const m of inserted) {
    await raw.execute({ sql: 'INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") VALUES (?, ?, ?, ?, ?, ?, ?)', args: [m.id, 'support-meta', m.content, m.role, 'v2', m.createdAt, 'user-carol'] });
  }
  const cases = [];
  for (const args of [{ perPage: false }, { perPage: 3 }, { page: 1, perPage: 3 }, { page: 2, perPage: 3 }, {}]) {
    const r = await memory.recall({ threadId: 'support-meta', ...args });
    cases.push({ kind: 'recall', args, messageIds: ids(r.messages), total: r.total, hasMore: r.hasMore });
  }
  result.reminders = { inserted, threads: { 'support-meta': cases } };
}
writeFileSync(out, JSON.stringify(result, (_k, v) => (v === Infinity ? { $number: 'Infinity' } : v), 1));
process.exit(0);
