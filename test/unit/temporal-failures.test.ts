// How the ingress tells a Temporal failure worth a redelivery from one that needs an operator.
import { NamespaceNotFoundError, PayloadConverterError, ServiceError } from '@temporalio/client';
import { classifyTemporalFailure } from '../../src/ingress/temporal-failures';

const grpcError = (code: number) =>
  new ServiceError('Failed to signalWithStart Workflow', {
    cause: Object.assign(new Error(`${code}`), { code, details: 'details', metadata: {} }),
  });

test('each gRPC status is retryable or permanent, named in the reason', () => {
  const permanent = [3, 5, 6, 7, 9, 12, 16];
  for (let code = 1; code <= 16; code++) {
    const failure = classifyTemporalFailure(grpcError(code));
    expect({ code, retryable: failure.retryable }).toEqual({ code, retryable: !permanent.includes(code) });
    expect(failure.reason).toMatch(/^[A-Z_]+: details$/);
  }
  expect(classifyTemporalFailure(grpcError(14)).reason).toBe('UNAVAILABLE: details');
});

test('a refusal of the ingress itself (namespace, credentials, server) is configuration; of one delivery, not', () => {
  const configuration = [5, 7, 9, 12, 16];
  for (let code = 1; code <= 16; code++) {
    expect({ code, configuration: classifyTemporalFailure(grpcError(code)).configuration }).toEqual({
      code,
      configuration: configuration.includes(code),
    });
  }
  expect(classifyTemporalFailure(new NamespaceNotFoundError('nowhere')).configuration).toBe(true);
  expect(classifyTemporalFailure(new PayloadConverterError('cannot encode a BigInt')).configuration).toBe(false);
});

test('the SDK’s own errors for a missing namespace or a payload it cannot convert are permanent; anything else retryable', () => {
  expect(classifyTemporalFailure(new NamespaceNotFoundError('nowhere'))).toEqual({
    retryable: false,
    configuration: true,
    reason: expect.stringMatching(/^NOT_FOUND: .*nowhere/),
  });
  expect(classifyTemporalFailure(new PayloadConverterError('cannot encode a BigInt')).retryable).toBe(false);
  expect(classifyTemporalFailure(new Error('socket hang up'))).toEqual({
    retryable: true,
    configuration: false,
    reason: 'socket hang up',
  });
});
