import type { Item } from "./store";

export const List = ({ items }: { items: Item[] }) => (
  <ul>
    {items.map((i) => <li key={i.id}>{i.name}</li>)}
  </ul>
);
