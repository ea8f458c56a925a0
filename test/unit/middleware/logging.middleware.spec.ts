import 'reflect-metadata';
import { jest } from '@jest/globals';
import { Container } from 'inversify';
import type { Logger } from 'pino';
import { MIDDLEWARE_OPTIONS, errorResult, okResult, type ToolResult } from '../../../src/contract/tool-middleware.js';
import { LoggingMiddleware, type LoggingOptions } from '../../../plugins/middleware/logging.middleware.js';
import { TRELLIS_LOGGER, createLogger } from '../../../plugins/middleware/logger.js';
import { invocation, scriptedNext } from './fake-invocation.js';

type LogRecord = Record<string, any>;

function build(options: Partial<LoggingOptions>, level: 'info' | 'warn' | 'debug' = 'debug') {
  const records: LogRecord[] = [];
  const logger: Logger = createLogger({
    level,
    destination: { write: (line: string) => void records.push(JSON.parse(line)) },
  });
  const container = new Container();
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options);
  container.bind(TRELLIS_LOGGER).toConstantValue(logger);
  container.bind(LoggingMiddleware).toSelf();
  return { middleware: container.get(LoggingMiddleware), records, logger };
}

describe('LoggingMiddleware', () => {
  it("masks the call's user and tenant (app.user_id, app.tenant) wherever they appear in a record, as words of their own", async () => {
    const { middleware, records } = build({});
    expect(LoggingMiddleware.requires()).toEqual([
      { key: 'app.user_id', optional: true },
      { key: 'app.tenant', optional: true },
    ]);
    const context = { ...invocation().context, deps: { 'app.user_id': 'u-42', 'app.tenant': 'acme' } };
    const args = { note: 'call u-42 (of acme) about order 1u-423', byUser: { 'u-42': ['u-42@mail'] } };
    await middleware.intercept(invocation({ args, context }), scriptedNext(okResult('done for u-42')).next);
    await middleware.intercept(
      invocation({ args: {}, context }),
      scriptedNext(errorResult('ToolFailed', 'acme has no user u-42')).next,
    );
    await middleware
      .intercept(invocation({ args: {}, context }), async () => {
        throw new Error('u-42 broke it');
      })
      .catch(() => undefined);
    const text = JSON.stringify(records);
    expect(text).not.toContain('u-42"');
    expect(records[0]!.args).toEqual({
      note: 'call [user] (of [tenant]) about order 1u-423',
      byUser: { '[user]': ['[user]@mail'] },
    });
    expect(records[1]!.result).toBe('done for [user]');
    expect(records[3]!.error.message).toBe('[tenant] has no user [user]');
    expect(records[5]!.error.message).toContain('[user] broke it');
    expect(text.match(/u-42(?!3)/g)).toBeNull();
  });

  it('logs ids as they are when the call names no user or tenant', async () => {
    const { middleware, records } = build({});
    await middleware.intercept(invocation({ args: { note: 'u-42' } }), scriptedNext(okResult(null)).next);
    expect(records[0]!.args).toEqual({ note: 'u-42' });
  });

  it('logs a start and a finish record with the plugin field', async () => {
    const { middleware, records } = build({});
    const { next } = scriptedNext(okResult({ total: 3 }));

    const result = await middleware.intercept(invocation(), next);

    expect(result).toEqual(okResult({ total: 3 }));
    expect(records).toHaveLength(2);
    const [start, finish] = records;
    expect(start).toMatchObject({
      level: 30,
      plugin: 'orders',
      event: 'tool.start',
      tool: 'orders.lookup',
      callId: 'call-1',
      attempt: 1,
      args: { id: 'A-1' },
    });
    expect(finish).toMatchObject({
      level: 30,
      plugin: 'orders',
      event: 'tool.finish',
      tool: 'orders.lookup',
      callId: 'call-1',
      ok: true,
      result: { total: 3 },
    });
    expect(typeof finish?.durationMs).toBe('number');
    expect(typeof finish?.time).toBe('string');
  });

  it('redacts default secret keys in args at any depth, case-insensitively', async () => {
    const { middleware, records } = build({});
    const args = {
      user: 'ada',
      Password: 'hunter2',
      nested: { deeper: [{ apikey: 'k-1', API_KEY: 'k-2' }], Authorization: 'Bearer x', token: { any: 'shape' } },
      headers: { cookie: 'sid=1', accept: 'json' },
      secret: 42,
    };

    await middleware.intercept(invocation({ args }), scriptedNext(okResult(null)).next);

    expect(records[0]?.args).toEqual({
      user: 'ada',
      Password: '[Redacted]',
      nested: {
        deeper: [{ apikey: '[Redacted]', API_KEY: '[Redacted]' }],
        Authorization: '[Redacted]',
        token: '[Redacted]',
      },
      headers: { cookie: '[Redacted]', accept: 'json' },
      secret: '[Redacted]',
    });
    expect(JSON.stringify(records)).not.toMatch(/hunter2|k-1|k-2|Bearer|sid=1/);
    // The tool still gets the real arguments.
    expect(args.Password).toBe('hunter2');
  });

  it('redacts result values and extra keys from the options', async () => {
    const { middleware, records } = build({ redact: ['ssn'] });
    const { next } = scriptedNext(okResult({ customer: { name: 'Ada', SSN: '123-45', session: { token: 't' } } }));

    await middleware.intercept(invocation({ args: { ssn: '999' } }), next);

    expect(records[0]?.args).toEqual({ ssn: '[Redacted]' });
    expect(records[1]?.result).toEqual({
      customer: { name: 'Ada', SSN: '[Redacted]', session: { token: '[Redacted]' } },
    });
  });

  it('logs failures with the error code at warn level', async () => {
    const { middleware, records } = build({});
    const failure: ToolResult = errorResult('ToolFailed', 'no such order', false);

    const result = await middleware.intercept(invocation(), scriptedNext(failure).next);

    expect(result).toBe(failure);
    expect(records[1]).toMatchObject({
      level: 40,
      event: 'tool.finish',
      ok: false,
      error: { code: 'ToolFailed', message: 'no such order', retryable: false },
    });
  });

  it('logs at the configured level', async () => {
    const { middleware, records } = build({ level: 'debug' });
    await middleware.intercept(invocation(), scriptedNext(okResult(1)).next);
    expect(records.map((record) => record.level)).toEqual([20, 20]);
  });

  it('respects the logger level: debug records are dropped by an info logger', async () => {
    const { middleware, records } = build({ level: 'debug' }, 'info');
    await middleware.intercept(invocation(), scriptedNext(okResult(1)).next);
    await middleware.intercept(invocation(), scriptedNext(errorResult('ToolFailed', 'boom')).next);
    expect(records.map((record) => record.event)).toEqual(['tool.finish']);
  });

  it('uses one child logger per plugin', async () => {
    const { middleware, records, logger } = build({});
    const child = jest.spyOn(logger, 'child');
    const { next } = scriptedNext(okResult(1));
    await middleware.intercept(invocation({ plugin: 'orders' }), next);
    await middleware.intercept(invocation({ plugin: 'billing', tool: 'billing.charge' }), next);
    await middleware.intercept(invocation({ plugin: 'orders' }), next);

    expect(records.map((record) => record.plugin)).toEqual([
      'orders',
      'orders',
      'billing',
      'billing',
      'orders',
      'orders',
    ]);
    expect(child.mock.calls.map(([bindings]) => bindings)).toEqual([{ plugin: 'orders' }, { plugin: 'billing' }]);
  });

  it('logs and rethrows when an inner layer throws', async () => {
    const { middleware, records } = build({});
    await expect(
      middleware.intercept(invocation(), async () => {
        throw new Error('inner crash');
      }),
    ).rejects.toThrow('inner crash');
    expect(records[1]).toMatchObject({ level: 40, event: 'tool.finish', ok: false, error: { message: 'inner crash' } });
  });

  it('creates a default pino logger when none is bound', () => {
    const container = new Container();
    container.bind(MIDDLEWARE_OPTIONS).toConstantValue({ level: 'warn' });
    container.bind(LoggingMiddleware).toSelf();
    const middleware = container.get(LoggingMiddleware);
    const logger = (middleware as unknown as { logger: Logger }).logger;
    expect(logger.level).toBe('warn');
    expect(typeof logger.child).toBe('function');
  });
});
