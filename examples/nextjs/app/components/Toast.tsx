"use client";

import { useEffect } from "react";

/** An error in a corner until it is dismissed (or 10 s pass). */
export function Toast(props: { text: string | null; onClose: () => void }) {
  const { text, onClose } = props;
  useEffect(() => {
    if (!text) return;
    const t = setTimeout(onClose, 10_000);
    return () => clearTimeout(t);
  }, [text, onClose]);
  if (!text) return null;
  return (
    <div className="toast" role="alert" data-testid="toast">
      <span>{text}</span>
      <button aria-label="Dismiss" onClick={onClose}>
        ×
      </button>
    </div>
  );
}
