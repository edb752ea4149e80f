// The failure converter of encrypted deployments: a failure's message and stack trace travel as an encoded payload, so
// the payload codec encrypts them too (an error may quote a tool's answer or the model's output). Loaded by path, since
// the worker bundles it into the workflow code as well.
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
