/**
 * What the pgvector index needs of a PostgreSQL connection: one parameterised statement at
 * a time. A `pg` `Pool` or `Client` is one, and so is a PGlite database.
 */
export interface SqlClient {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ readonly rows: R[] }>;
}
