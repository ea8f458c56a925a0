import type { Container } from 'inversify';
import type { SessionHost } from '../agent/session-host.js';

/**
 * The kernel's internals of one app, for the kernel's own tests only: no public entry
 * exports this module, and the package's `exports` map keeps it out of reach of
 * installed code. Hosts and plugins use the public API and the ports.
 */
export interface KernelInternals extends SessionHost {
  /** The container plugins resolve host services from. */
  readonly providers: Container;
}

const internals = new WeakMap<object, KernelInternals>();

/** @internal Called by `Trellis` once, in its constructor. */
export function registerKernel(app: object, kernel: KernelInternals): void {
  internals.set(app, kernel);
}

/** @internal The internals of `app`, for tests of the kernel. */
export function kernelOf(app: object): KernelInternals {
  const kernel = internals.get(app);
  if (!kernel) throw new Error('Not a Trellis app');
  return kernel;
}
