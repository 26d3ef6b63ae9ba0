// What the trace page's scripts put on window: common.js's helpers (read by list.js and inbox.js) and the
// trace page's read-only handle for scripts and tests.
interface Window {
  toolspanCommon: typeof toolspanCommon;
  toolspanPage: Readonly<{
    goTo(id: string): boolean;
    selected(): string | null;
    expandAll(): void;
    collapseAll(): void;
  }>;
}
