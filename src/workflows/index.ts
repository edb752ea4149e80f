// The workflows this worker registers.
export { supportConversation } from './support-conversation';
export { indexResolvedConversations } from './index-conversations';
