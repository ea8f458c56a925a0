/**
 * Child module of root-import-weight.spec.ts: opens an in-memory SqliteStore, which must
 * load better-sqlite3 then (through `require`, out of sight of ES module hooks).
 */
import { SqliteStore } from '../../../../src/engine/stores/sqlite-store.js';

await SqliteStore.open(':memory:').close();
