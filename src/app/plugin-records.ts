import type { PluginRecord, PluginRecords } from '../engine/plugin/plugin-records.js';
import type { RecordStore } from '../engine/stores/record-store.js';

/**
 * The records a plugin gets on its host: the store's records under the plugin's own name as
 * namespace, which the plugin cannot choose. `store()` is asked at each call, so a plugin
 * whose app's store keeps no records fails when it uses them, saying so, not at install.
 */
export function pluginRecords(namespace: string, store: () => RecordStore): PluginRecords {
  return Object.freeze({
    get: async <T>(subject: string, key: string) =>
      (await store().getRecord(namespace, subject, key)) as PluginRecord<T> | undefined,
    put: (subject: string, key: string, value: unknown) => store().putRecord(namespace, subject, key, value),
    list: async <T>(subject: string) => (await store().listRecords(namespace, subject)) as readonly PluginRecord<T>[],
    delete: (selector: { readonly subject?: string; readonly keyPrefix?: string }) =>
      store().deleteRecords(namespace, {
        ...(selector?.subject !== undefined && { subject: selector.subject }),
        ...(selector?.keyPrefix !== undefined && { keyPrefix: selector.keyPrefix }),
      }),
  });
}
