// Test helper (Memory Studio): studio-memory-delete-thread.mjs for any store: real Mastra deletes a thread with
// @mastra/memory's Memory.deleteThread on a copy of a server store (a libSQL server gets its LibSQLVector too;
// PostgreSQL none: pgvector is not installed here), waiting for its background vector cleanup. Prints {ok: true}.
// usage: node studio-memory-delete-thread-server.mjs DB THREAD_ID [--store pg|libsql-remote --url URL]
import { Memory } from '@mastra/memory';
import { splitArgs, target, loadStore, makeStorage, makeVector, initTarget } from './stores.mjs';

const { pos: [db, threadId], store, url } = splitArgs(process.argv.slice(2));
const t = target(store, url, db);
await loadStore(store);
await initTarget(t);
const storage = makeStorage(t, 'studio-memory-delete');
await storage.init();
const vector = store === 'libsql-remote' ? await makeVector(t, 'studio-memory-delete-vector') : undefined;
const memory = new Memory({ storage, ...(vector ? { vector } : {}), options: { lastMessages: 10 } });
await memory.deleteThread(threadId);
await memory.settled();
console.log(JSON.stringify({ ok: true }));
process.exit(0);
