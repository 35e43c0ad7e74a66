"use client";

import { useEffect, useState } from "react";
import type { Persona, SessionMode } from "@chirality/harness-client";

export interface NewSessionChoice {
  projectRoot: string;
  persona: string | null;
  mode: SessionMode;
}

/** Project root (the gateway's allowed roots offered), persona and mode. */
export function NewSession(props: { roots: string[]; personas: Persona[]; disabled: boolean; onCreate: (c: NewSessionChoice) => void }) {
  const [root, setRoot] = useState("");
  const [persona, setPersona] = useState("");
  const [mode, setMode] = useState<SessionMode>("direct");
  useEffect(() => {
    if (!root && props.roots[0]) setRoot(props.roots[0]);
  }, [props.roots, root]);
  return (
    <form
      className="new-session"
      onSubmit={(e) => {
        e.preventDefault();
        props.onCreate({ projectRoot: root, persona: persona || null, mode });
      }}
    >
      <label>
        Project
        <input data-testid="root-input" list="roots" value={root} onChange={(e) => setRoot(e.target.value)} required />
        <datalist id="roots">
          {props.roots.map((r) => (
            <option key={r} value={r} />
          ))}
        </datalist>
      </label>
      <label>
        Persona
        <select data-testid="persona-select" value={persona} onChange={(e) => setPersona(e.target.value)}>
          <option value="">none</option>
          {props.personas.map((p) => (
            <option key={p.id} value={p.id} title={p.description}>
              {p.id}
            </option>
          ))}
        </select>
      </label>
      <label>
        Mode
        <select data-testid="mode-select" value={mode} onChange={(e) => setMode(e.target.value as SessionMode)}>
          <option value="direct">direct</option>
          <option value="workbench">workbench</option>
          <option value="pipeline">pipeline</option>
        </select>
      </label>
      <button data-testid="create-session" type="submit" disabled={props.disabled || !root}>
        New session
      </button>
    </form>
  );
}
