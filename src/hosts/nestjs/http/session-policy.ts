/**
 * The session policy of the sessions API and the chat endpoint: the kernel's, so every host
 * that takes requests from users (Nest, the AI SDK, AG-UI and A2A handlers) asks the same one.
 */
export {
  ownerDecidesSessionPolicy,
  ownerOnlySessionPolicy,
  type SessionAccessRequest,
  type SessionAction,
  type SessionPolicy,
} from '../../../../index.js';
export { authorizeSessionAccess, userIdPrincipal } from '../../../../host.js';
