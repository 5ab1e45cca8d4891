import React from "react";

interface Props {
  title: string;
}

/** A titled card. */
export function Card({ title }: Props) {
  return <div className="card">{title}</div>;
}

export const List = ({ items }: { items: string[] }) => (
  <ul>
    {items.map((i) => <li key={i}>{i}</li>)}
  </ul>
);
