/** One invalid field: `path` is dotted and indexed (`filters[0].column`), or `(input)` for the whole input. */
export interface FieldError {
  readonly path: string;
  readonly messages: readonly string[];
}
