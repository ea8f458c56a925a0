/** What `app.selfTest()` returns: pass/fail per plugin and per `@SelfTest` method. */
export interface SelfTestReport {
  readonly ok: boolean;
  readonly plugins: readonly {
    readonly plugin: string;
    readonly ok: boolean;
    readonly tests: readonly { readonly name: string; readonly ok: boolean; readonly error?: string }[];
  }[];
}
