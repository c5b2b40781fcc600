/** oidc-provider's own in-memory adapter (not in its published types). */
declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  import type { Adapter, AdapterConstructor } from 'oidc-provider';
  const MemoryAdapter: AdapterConstructor & (new (name: string) => Adapter);
  export default MemoryAdapter;
}
