/*
 * The program of the query process. `queryChildMain` is sent to `node -e` as its source
 * text (`Function.prototype.toString`), so it must be self-contained: no imports, no
 * names from this module — only its parameters and Node's globals.
 */

/** A query for the child: the SQL (already checked read-only) and the limits to apply. */
export interface QueryRequest {
  readonly id: number;
  readonly sql: string;
  readonly maxRows: number;
  readonly maxCellChars: number;
  readonly maxResultBytes: number;
}

/** The child's answer to one {@link QueryRequest}. */
export type QueryReply =
  | {
      readonly id: number;
      readonly ok: true;
      readonly columns: string[];
      readonly rows: Record<string, unknown>[];
      readonly truncatedBy?: 'rows' | 'bytes';
    }
  | { readonly id: number; readonly ok: false; readonly message: string; readonly code?: string };

/**
 * Opens the database read-only and answers each {@link QueryRequest} on the IPC channel.
 * Blobs become a short summary (`[blob 50000000 bytes]`), long text is cut, and rows stop
 * at the row and byte limits, so no answer is larger than the limits allow. The process
 * leaves when its parent disconnects.
 */
export function queryChildMain(load: (id: string) => unknown, driverPath: string, databasePath: string): void {
  type Db = {
    prepare(sql: string): {
      readonly: boolean;
      reader: boolean;
      columns(): { name: string }[];
      iterate(): Iterable<Record<string, unknown>>;
    };
  };
  const Driver = load(driverPath) as new (path: string, options: object) => Db;
  const db = new Driver(databasePath, { readonly: true, fileMustExist: true });
  const send = (reply: QueryReply) => process.send!(reply);
  const cell = (value: unknown, maxChars: number): unknown => {
    if (value instanceof Uint8Array) return `[blob ${value.byteLength} bytes]`;
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'string' && value.length > maxChars)
      return `${value.slice(0, maxChars)}… [${value.length} characters]`;
    return value;
  };
  process.on('disconnect', () => process.exit(0));
  process.send!({ ready: true });
  process.on('message', (message) => {
    const request = message as QueryRequest;
    try {
      const statement = db.prepare(request.sql);
      if (!statement.readonly || !statement.reader)
        throw new Error('the statement would change the database or returns no rows');
      const rows: Record<string, unknown>[] = [];
      let bytes = 2;
      let truncatedBy: 'rows' | 'bytes' | undefined;
      for (const row of statement.iterate()) {
        if (rows.length === request.maxRows) {
          truncatedBy = 'rows';
          break;
        }
        const out: Record<string, unknown> = {};
        for (const key of Object.keys(row)) out[key] = cell(row[key], request.maxCellChars);
        const size = Buffer.byteLength(JSON.stringify(out)) + 1;
        if (bytes + size > request.maxResultBytes) {
          truncatedBy = 'bytes';
          break;
        }
        bytes += size;
        rows.push(out);
      }
      send({ id: request.id, ok: true, columns: statement.columns().map((c) => c.name), rows, truncatedBy });
    } catch (error) {
      const failure = error as { message?: unknown; code?: unknown };
      send({
        id: request.id,
        ok: false,
        message: String(failure?.message ?? error),
        code: typeof failure?.code === 'string' ? failure.code : undefined,
      });
    }
  });
}
