import 'reflect-metadata';
import { Container } from 'inversify';
import { MIDDLEWARE_OPTIONS, okResult } from '../../../src/contract/tool-middleware.js';
import { AuthMiddleware, type AuthOptions } from '../../../plugins/middleware/auth.middleware.js';
import { invocation, scriptedNext } from './fake-invocation.js';

function build(options: Partial<AuthOptions>): AuthMiddleware {
  const container = new Container();
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options);
  container.bind(AuthMiddleware).toSelf();
  return container.get(AuthMiddleware);
}

describe('AuthMiddleware', () => {
  it('lets a caller holding every scope through', async () => {
    const { next, calls } = scriptedNext(okResult('order'));
    const result = await build({ scopes: ['orders:read'] }).intercept(
      invocation({ values: { 'app.scopes': ['profile', 'orders:read'] } }),
      next,
    );
    expect(result).toEqual(okResult('order'));
    expect(calls).toHaveLength(1);
  });

  it('accepts granted scopes as a space-separated string', async () => {
    const { next, calls } = scriptedNext(okResult('order'));
    await build({ scopes: ['orders:read', 'orders:write'] }).intercept(
      invocation({ values: { 'app.scopes': 'orders:write  orders:read' } }),
      next,
    );
    expect(calls).toHaveLength(1);
  });

  it('denies without calling the tool and names the missing scopes and the key', async () => {
    const { next, calls } = scriptedNext(okResult('order'));

    const result = await build({ scopes: ['orders:read', 'orders:write', 'admin'] }).intercept(
      invocation({ values: { 'app.scopes': ['orders:read'] } }),
      next,
    );

    expect(calls).toHaveLength(0);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe('AuthDenied');
    expect(result.error.retryable).toBe(false);
    expect(result.error.message).toContain('orders:write, admin');
    expect(result.error.message).not.toContain('orders:read,');
    expect(result.error.message).toContain("'app.scopes'");
  });

  it('denies when no scopes are granted at all', async () => {
    const { next, calls } = scriptedNext(okResult('order'));
    const result = await build({ scopes: ['orders:read'] }).intercept(invocation(), next);
    expect(calls).toHaveLength(0);
    expect(result).toMatchObject({ ok: false, error: { code: 'AuthDenied' } });
  });

  it('reads the scopes from a custom scopesKey', async () => {
    const middleware = build({ scopes: ['kb:search'], scopesKey: 'app.grants' });
    const allowed = scriptedNext(okResult('hit'));
    await middleware.intercept(invocation({ values: { 'app.grants': ['kb:search'], 'app.scopes': [] } }), allowed.next);
    expect(allowed.calls).toHaveLength(1);

    const denied = await middleware.intercept(invocation({ values: { 'app.scopes': ['kb:search'] } }), allowed.next);
    expect(denied).toMatchObject({ ok: false, error: { code: 'AuthDenied' } });
    if (!denied.ok) expect(denied.error.message).toContain("'app.grants'");
  });

  it('declares the scopes key as required context, defaulting to app.scopes', () => {
    expect(AuthMiddleware.requires({ scopes: ['a'] })).toEqual(['app.scopes']);
    expect(AuthMiddleware.requires({ scopes: ['a'], scopesKey: 'app.grants' })).toEqual(['app.grants']);
  });
});
