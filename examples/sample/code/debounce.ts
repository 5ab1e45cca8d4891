// Debounce: call fn once the calls have stopped for `wait` milliseconds.
export function debounce<T extends (...args: unknown[]) => void>(fn: T, wait: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (...args: Parameters<T>) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), wait);
  };
}

export class SearchBox {
  constructor(private onQuery: (q: string) => void) {}

  bind(input: HTMLInputElement) {
    input.addEventListener("input", debounce(() => this.onQuery(input.value), 200));
  }
}
