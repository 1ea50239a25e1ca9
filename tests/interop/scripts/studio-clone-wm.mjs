// Test helper (Memory Studio): lets real Mastra clone a thread (Memory.cloneThread) with working memory
// enabled in SCOPE ("thread" or "resource"), so the studio's copy of working memory can be compared.
// usage: node studio-clone-wm.mjs DB_FILE SOURCE_THREAD_ID NEW_THREAD_ID SCOPE [OPTIONS_JSON]
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';

const [file, sourceThreadId, newThreadId, scope, extra = '{}'] = process.argv.slice(2);
const storage = new LibSQLStore({ id: 'studio-clone-wm', url: `file:${file}` });
await storage.init();
const memory = new Memory({ storage, options: { lastMessages: 10, workingMemory: { enabled: true, scope } } });
const res = await memory.cloneThread({ sourceThreadId, newThreadId, ...JSON.parse(extra) });
console.log(JSON.stringify({ thread: { id: res.thread.id, resourceId: res.thread.resourceId } }));
process.exit(0);
