// Test helper (Memory Studio): which buffered chunks real Mastra activates, and the projected message removal
// its status reports, for a record whose observation.bufferActivation may be an absolute retention (>= 1000)
// above the message threshold.
// usage: node studio-activation-boundary.mjs DB_FILE THREAD_ID [PENDING_TOKENS]
// The ObservationalMemory is built from the record's stored config as mastra-activate.mjs builds it, except
// bufferActivation: Mastra's constructor refuses an absolute retention >= messageTokens (validateBufferConfig),
// so the engine is built with its default and the stored value is set on its observation config afterwards;
// from there on every figure is Mastra's own code: the projection (emitProgress -> calculateProjectedMessageRemoval,
// the `data-om-status` part's buffered.observations.projectedMessageRemoval, with PENDING_TOKENS as the window,
// default the record's pendingMessageTokens) and then the activation (activate() -> resolveActivationRatio ->
// storage.swapBufferedToActive), which writes to DB_FILE (pass a copy).
// Prints {bufferActivation, threshold, pendingMessageTokens, projectedMessageRemoval, activated,
//   activatedCycleIds, chunksBefore, chunksAfter, row}.
import { cli, open, locate, fixedModel, omOptions, engine, currentRow, snapshot } from './om-ref.mjs';

const { pos: [db, threadId, pendingArg], store, url } = cli(process.argv.slice(2));
if (!db || !threadId) { console.error('usage: node studio-activation-boundary.mjs DB THREAD_ID [PENDING_TOKENS]'); process.exit(2); }
const ctx = await open(store, url, db);
const { resourceId, lookupKey, scope, cfg } = await locate(ctx, threadId);
const stored = cfg.observation?.bufferActivation;
const buildable = { ...cfg, observation: { ...cfg.observation, bufferActivation: undefined } };
const { om } = await engine(ctx.storage, omOptions(buildable, scope, fixedModel('').model));
if (stored !== undefined && stored !== null) om.getObservationConfig().bufferActivation = stored;

const parse = v => (typeof v === 'string' ? JSON.parse(v) : v);
const record = await om.getRecord(threadId, resourceId);
const chunksBefore = parse(record.bufferedObservationChunks) ?? [];
const mt = om.getEffectiveMessageTokens(record);
const threshold = typeof mt === 'number' ? mt : mt.max;
const pending = pendingArg !== undefined ? Number(pendingArg) : (record.pendingMessageTokens ?? 0);

const parts = [];
await om.emitProgress({ record, pendingTokens: pending, threshold, effectiveObservationTokensThreshold: 0,
  currentObservationTokens: record.observationTokenCount ?? 0, writer: { custom: async p => { parts.push(p); } },
  stepNumber: 0, threadId, resourceId });
const status = parts.find(p => p.type === 'data-om-status');

const res = await om.activate({ threadId, resourceId });
const row = currentRow(await snapshot(ctx, resourceId), lookupKey);
const chunksAfter = parse(row.bufferedObservationChunks) ?? [];
console.log(JSON.stringify({
  bufferActivation: om.getObservationConfig().bufferActivation, threshold, pendingMessageTokens: record.pendingMessageTokens,
  projectionPendingTokens: pending,
  projectedMessageRemoval: status?.data?.windows?.buffered?.observations?.projectedMessageRemoval ?? null,
  activated: res.activated,
  activatedCycleIds: chunksBefore.filter(c => !chunksAfter.some(a => a.cycleId === c.cycleId)).map(c => c.cycleId),
  chunksBefore: chunksBefore.length, chunksAfter: chunksAfter.length,
  row: { pendingMessageTokens: row.pendingMessageTokens, observationTokenCount: row.observationTokenCount },
}));
process.exit(0);
