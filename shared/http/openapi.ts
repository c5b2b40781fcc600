/** FastAPI's operationId: function name + path with non-word characters as `_` + method. */
export const operationId = (name: string, path: string, method: string): string =>
  `${name}${path}`.replaceAll(/\W/g, '_') + `_${method.toLowerCase()}`;

interface OpenApiDocument {
  paths?: object;
  components?: object;
}

interface MergedDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
}

/** Merges the per-group documents into the one document the platform serves. */
export function mergeDocuments(
  info: { title: string; version: string; description: string },
  docs: readonly OpenApiDocument[],
): MergedDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Record<string, Record<string, unknown>> = {};
  for (const doc of docs) {
    for (const [path, ops] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, unknown>>))
      paths[path] = { ...paths[path], ...ops };
    for (const [kind, entries] of Object.entries((doc.components ?? {}) as Record<string, Record<string, unknown>>))
      components[kind] = { ...components[kind], ...entries };
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return { openapi: '3.1.0', info, paths: sortedPaths, components };
}
