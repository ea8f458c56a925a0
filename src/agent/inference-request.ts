export type { InferenceRequest } from '../contract/hook-payloads.js';
