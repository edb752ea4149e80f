// The cases both reply guards (Melvin's and the sandbox validation service's, written apart) must agree on: an internal
// id is shown only as a token of its own, never as part of a longer token or of an amount.

/** [id, reply, whether the reply shows the id] */
export const ID_TOKEN_CASES: [string, string, boolean][] = [
  ['250', 'Your payment of $250 is on its way.', false],
  ['250', 'That is €250 in total.', false],
  ['250', 'We paid 250.00 on Friday.', false],
  ['250', 'We paid 1,250 in total.', false],
  ['250', 'The app-250 build is live.', false],
  ['250', 'Your code is 2501.', false],
  ['250', 'Reference 250 is open.', true],
  ['250', 'See ticket #250.', true],
  ['250', 'Your reference (250) is open.', true],
  ['app-250', 'Your app-250 build is live.', true],
  ['app-250', 'Your APP-250 build is live.', true],
  ['app-11', 'It is app-11.', true],
  ['app-11', 'It is app-110.', false],
  ['pay_123', 'Payment pay_123, processing.', true],
  ['pay_123', 'Payment $pay_123 is processing.', true],
  ['pay_123', 'Payment xpay_123 is processing.', false],
  ['pay-31', 'pay-31’s status is processing.', true],
  ['12345', 'Order 12345 shipped.', true],
  ['12345', 'Order 123456 shipped.', false],
];
