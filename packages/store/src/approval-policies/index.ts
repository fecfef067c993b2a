export {
  ApprovalPolicyStore,
  type ApprovalPolicyStoreOptions,
  type StoredApprovalPolicy,
} from './approval-policy-store.js';
