import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { ToolMiddlewareClass } from '../../../src/contract/tool-middleware.js';
import {
  AuthMiddleware,
  AuthOptions,
  CacheMiddleware,
  CacheOptions,
  LoggingMiddleware,
  LoggingOptions,
  RateLimitMiddleware,
  RateLimitOptions,
  RetryMiddleware,
  RetryOptions,
  TimeoutMiddleware,
  TimeoutOptions,
} from '../../../plugins/middleware/index.js';

/** Validates as the kernel does at install; returns the names of the invalid fields. */
function invalidFields(type: new () => object, plain: object): string[] {
  const errors = validateSync(plainToInstance(type, plain), { forbidUnknownValues: false });
  return errors.map((error) => error.property).sort();
}

describe('middleware options DTOs', () => {
  it('each middleware class declares its options DTO for the kernel to check', () => {
    const pairs: [ToolMiddlewareClass, new () => object][] = [
      [RetryMiddleware, RetryOptions],
      [TimeoutMiddleware, TimeoutOptions],
      [AuthMiddleware, AuthOptions],
      [LoggingMiddleware, LoggingOptions],
      [RateLimitMiddleware, RateLimitOptions],
      [CacheMiddleware, CacheOptions],
    ];
    for (const [middleware, options] of pairs) expect(middleware.optionsType).toBe(options);
  });

  it('RetryOptions applies defaults and rejects out-of-range values', () => {
    expect(plainToInstance(RetryOptions, {})).toMatchObject({
      maxRetries: 2,
      baseDelayMs: 100,
      maxDelayMs: 5000,
      factor: 2,
    });
    expect(invalidFields(RetryOptions, {})).toEqual([]);
    expect(invalidFields(RetryOptions, { maxRetries: 11 })).toEqual(['maxRetries']);
    expect(invalidFields(RetryOptions, { maxRetries: -1, baseDelayMs: 'fast', maxDelayMs: -5, factor: 0.5 })).toEqual([
      'baseDelayMs',
      'factor',
      'maxDelayMs',
      'maxRetries',
    ]);
    expect(invalidFields(RetryOptions, { maxRetries: 1.5 })).toEqual(['maxRetries']);
  });

  it('TimeoutOptions requires a positive ms', () => {
    expect(invalidFields(TimeoutOptions, { ms: 500 })).toEqual([]);
    expect(invalidFields(TimeoutOptions, {})).toEqual(['ms']);
    expect(invalidFields(TimeoutOptions, { ms: 0 })).toEqual(['ms']);
    expect(invalidFields(TimeoutOptions, { ms: '10' })).toEqual(['ms']);
  });

  it('AuthOptions requires non-empty string scopes and defaults scopesKey', () => {
    expect(plainToInstance(AuthOptions, { scopes: ['a'] }).scopesKey).toBe('app.scopes');
    expect(invalidFields(AuthOptions, { scopes: ['orders:read'] })).toEqual([]);
    expect(invalidFields(AuthOptions, {})).toEqual(['scopes']);
    expect(invalidFields(AuthOptions, { scopes: [] })).toEqual(['scopes']);
    expect(invalidFields(AuthOptions, { scopes: [1] })).toEqual(['scopes']);
    expect(invalidFields(AuthOptions, { scopes: 'orders:read' })).toEqual(['scopes']);
    expect(invalidFields(AuthOptions, { scopes: ['a'], scopesKey: '' })).toEqual(['scopesKey']);
  });

  it('LoggingOptions accepts pino levels and string redact keys only', () => {
    expect(plainToInstance(LoggingOptions, {})).toMatchObject({ level: 'info', redact: [] });
    expect(invalidFields(LoggingOptions, { level: 'debug', redact: ['ssn'] })).toEqual([]);
    expect(invalidFields(LoggingOptions, { level: 'verbose' })).toEqual(['level']);
    expect(invalidFields(LoggingOptions, { redact: 'ssn' })).toEqual(['redact']);
    expect(invalidFields(LoggingOptions, { redact: [1] })).toEqual(['redact']);
  });

  it('RateLimitOptions requires a positive capacity and refill rate', () => {
    expect(invalidFields(RateLimitOptions, { capacity: 5, refillPerSecond: 0.5, userKey: 'app.user_id' })).toEqual([]);
    expect(invalidFields(RateLimitOptions, {})).toEqual(['capacity', 'refillPerSecond']);
    expect(invalidFields(RateLimitOptions, { capacity: 0, refillPerSecond: -1 })).toEqual([
      'capacity',
      'refillPerSecond',
    ]);
    expect(invalidFields(RateLimitOptions, { capacity: 1.5, refillPerSecond: 1 })).toEqual(['capacity']);
    expect(invalidFields(RateLimitOptions, { capacity: 1, refillPerSecond: 1, userKey: 7 })).toEqual(['userKey']);
  });

  it('CacheOptions requires a positive ttlMs and defaults maxEntries', () => {
    expect(plainToInstance(CacheOptions, { ttlMs: 10 }).maxEntries).toBe(1000);
    expect(invalidFields(CacheOptions, { ttlMs: 10 })).toEqual([]);
    expect(invalidFields(CacheOptions, {})).toEqual(['ttlMs']);
    expect(invalidFields(CacheOptions, { ttlMs: -1, maxEntries: 0 })).toEqual(['maxEntries', 'ttlMs']);
  });
});
