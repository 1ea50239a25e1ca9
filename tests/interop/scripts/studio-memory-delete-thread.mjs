// Test helper (Memory Studio): lets real Mastra delete a thread with @mastra/memory's Memory.deleteThread
// (its owned reminder thread, messages, row, Observational Memory records and — with a LibSQLVector on the
// same file — its vectors), waiting for the background vector cleanup. Prints {ok: true}.
// usage: node studio-memory-delete-thread.mjs DB_FILE THREAD_ID
import { Memory } from '@mastra/memory';
import { LibSQLStore, LibSQLVector } from '@mastra/libsql';

const [file, threadId] = process.argv.slice(2);
const storage = new LibSQLStore({ id: 'studio-memory-delete', url: `file:${file}` });
await storage.init();
const vector = new LibSQLVector({ id: 'studio-memory-delete-vector', url: `file:${file}` });
const memory = new Memory({ storage, vector, options: { lastMessages: 10 } });
await memory.deleteThread(threadId);
await memory.settled();
console.log(JSON.stringify({ ok: true }));
process.exit(0);
