import {
  assertRecordName,
  assertRecordSelector,
  encodeRecordValue,
  type RecordSelector,
  type RecordStore,
  type StoredRecord,
} from './record-store.js';

/**
 * Records in process memory: what `MemoryStore` keeps, and what plugins of an app without a
 * store get. Values are kept as JSON text, so no caller holds a stored value.
 */
export class MemoryRecords implements RecordStore {
  /** namespace → subject → key → record (value as JSON text). */
  private readonly records = new Map<string, Map<string, Map<string, { text: string; updatedAt: string }>>>();

  async getRecord(namespace: string, subject: string, key: string): Promise<StoredRecord | undefined> {
    check(namespace, subject, key);
    const found = this.records.get(namespace)?.get(subject)?.get(key);
    return found && { key, value: JSON.parse(found.text) as unknown, updatedAt: found.updatedAt };
  }

  async putRecord(namespace: string, subject: string, key: string, value: unknown): Promise<void> {
    check(namespace, subject, key);
    const text = encodeRecordValue(value);
    const subjects = this.records.get(namespace) ?? new Map<string, Map<string, { text: string; updatedAt: string }>>();
    this.records.set(namespace, subjects);
    const keys = subjects.get(subject) ?? new Map<string, { text: string; updatedAt: string }>();
    subjects.set(subject, keys);
    keys.set(key, { text, updatedAt: new Date().toISOString() });
  }

  async listRecords(namespace: string, subject: string): Promise<readonly StoredRecord[]> {
    assertRecordName('namespace', namespace);
    assertRecordName('subject', subject);
    const keys = this.records.get(namespace)?.get(subject);
    if (!keys) return [];
    return [...keys.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, r]) => ({ key, value: JSON.parse(r.text) as unknown, updatedAt: r.updatedAt }));
  }

  async deleteRecords(namespace: string, selector: RecordSelector): Promise<number> {
    assertRecordName('namespace', namespace);
    assertRecordSelector(selector);
    const subjects = this.records.get(namespace);
    if (!subjects) return 0;
    let deleted = 0;
    for (const [subject, keys] of subjects) {
      if (selector.subject !== undefined && subject !== selector.subject) continue;
      for (const key of [...keys.keys()]) {
        if (selector.keyPrefix !== undefined && !key.startsWith(selector.keyPrefix)) continue;
        keys.delete(key);
        deleted++;
      }
      if (keys.size === 0) subjects.delete(subject);
    }
    return deleted;
  }
}

function check(namespace: string, subject: string, key: string): void {
  assertRecordName('namespace', namespace);
  assertRecordName('subject', subject);
  assertRecordName('key', key);
}
