// Test helper (Memory Studio): lets real Mastra delete a thread through its storage adapter
// (LibSQLStore memory domain `deleteThread`, the call Mastra's core MastraMemory.deleteThread and the
// agent controller make) on a copy of a memory.db. That call deletes the thread row and its messages and
// leaves the thread's Observational Memory records behind (Mastra #16621); @mastra/memory's own
// Memory.deleteThread also clears them. Prints {ok: true}.
// usage: node studio-delete-thread.mjs DB_FILE THREAD_ID
import { LibSQLStore } from '@mastra/libsql';

const [file, threadId] = process.argv.slice(2);
const storage = new LibSQLStore({ id: 'studio-delete-thread', url: `file:${file}` });
await storage.init();
await storage.stores.memory.deleteThread({ threadId });
console.log(JSON.stringify({ ok: true }));
process.exit(0);
