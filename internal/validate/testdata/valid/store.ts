export interface Item {
  id: number;
  name: string;
}

export class Store<T extends Item> {
  private items = new Map<number, T>();

  add(item: T): void {
    this.items.set(item.id, item);
  }
}
