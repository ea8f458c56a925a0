/**
 * The key of a session's (and an agent's) handle for delegation: what the kernel uses to run
 * a sub-agent's turn with its place in the chain (`DelegationFrame`). Not exported from the
 * package, so an application cannot pass a forged frame through `send`/`resume`.
 */
export const DELEGATE: unique symbol = Symbol('trellis.delegate');
