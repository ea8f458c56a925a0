import { Trellis, type ModelProvider, type SessionStore } from 'trellis';
import { paymentsModel, refundsModel, triageModel } from './desk-models.js';
import { PaymentsPlugin } from './payments.plugin.js';

export interface DeskModels {
  readonly triage: ModelProvider;
  readonly refunds: ModelProvider;
  readonly payments: ModelProvider;
}

/**
 * Three agents, both delegation patterns:
 * - `triage` hands the conversation to `refunds` (a handoff: the session's active agent changes);
 * - `refunds` uses `payments` as a tool (it keeps control and gets the reply);
 * - `payments` owns the `payments.refund` tool, whose calls wait for a human.
 */
export async function createDelegationDesk(
  store: SessionStore,
  models: DeskModels = { triage: triageModel(), refunds: refundsModel(), payments: paymentsModel() },
) {
  const app = Trellis.create({ store });
  await app.install(PaymentsPlugin);
  app.agent({
    name: 'payments',
    model: models.payments,
    instructions: 'You pay refunds with payments.refund.',
    plugins: ['payments'],
  });
  app.agent({
    name: 'refunds',
    model: models.refunds,
    instructions: 'You handle refunds. Ask the payments agent to pay; hand back to triage when the customer is done.',
    plugins: [],
    agents: [
      {
        agent: 'payments',
        name: 'ask_payments',
        description: 'Ask the payments agent to pay a refund. Say the order and the amount in cents.',
      },
    ],
    handoffs: [{ agent: 'triage' }],
  });
  const triage = app.agent({
    name: 'triage',
    model: models.triage,
    instructions: 'You greet customers and route refund questions to the refunds agent.',
    plugins: [],
    handoffs: [{ agent: 'refunds', description: 'Hand refund questions to the refunds agent.' }],
  });
  return { app, triage };
}
