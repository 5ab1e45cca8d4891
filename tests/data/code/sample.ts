import { Logger } from "./logger";

/** Options for the store. */
export interface StoreOptions {
  name: string;
  ttl?: number;
}

export type Key = string | number;

/** Adds two numbers. */
export const add = (a: number, b: number): number => {
  return a + b;
};

const double = function (x: number) {
  return x * 2;
};

/**
 * A key-value store.
 */
@Injectable()
export class Store<T> extends Base {
  private items = new Map<Key, T>();

  /** Gets a value. */
  get(key: Key): T | undefined {
    return this.items.get(key);
  }

  @Log()
  async set(
    key: Key,
    value: T,
  ): Promise<void> {
    this.items.set(key, value);
  }

  private handle = (e: Event) => {
    console.log("{", e);
  };
}

export namespace Geometry {
  export function area(r: number): number {
    return Math.PI * r * r;
  }
}

export enum Mode {
  Fast,
  Slow,
}

export default function main(): void {}
