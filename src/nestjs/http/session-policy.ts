/**
 * The session policy of the sessions API and the chat endpoint: the kernel's, so every host
 * that takes requests from users (Nest, the AI SDK, AG-UI and A2A handlers) asks the same one.
 */
export {
  authorizeSessionAccess,
  ownerDecidesSessionPolicy,
  ownerOnlySessionPolicy,
  userIdPrincipal,
  type SessionAccessRequest,
  type SessionAction,
  type SessionPolicy,
} from '../../../index.js';
