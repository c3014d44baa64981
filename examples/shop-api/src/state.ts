// The demo shop's state: seeded data plus everything written since (cancellations, bookings, returns,
// notes, addresses, operations, idempotency records), in memory and optionally saved to a JSON file.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { CUSTOMERS, ORDERS, SERVICES, SLOT_DAYS, SLOT_HOURS, STORES, type Customer, type Order, type Service } from "./data.ts";

export type OperationKind = "cancel_order" | "book_slot" | "create_return" | "update_address" | "add_note";
export type OperationStatus = "pending" | "applied" | "not_applied";
export type Operation = {
  operationId: string;
  kind: OperationKind;
  /** The order, slot or customer the operation is about. */
  target: string;
  idempotencyKey?: string;
  status: OperationStatus;
  createdAt: string;
  /** When a pending operation finishes (epoch ms), and how. */
  completesAt?: number;
  completesAs?: Exclude<OperationStatus, "pending">;
  reason?: string;
  result?: Record<string, unknown>;
};

/** A stored answer to a request with an Idempotency-Key: replayed for the same request, refused for another. */
export type IdempotencyRecord = { fingerprint: string; status: number; body: unknown; operationId?: string; done: boolean };

export type Booking = { bookingId: string; slotId: string; customerName: string; reminder: string; service: Service; storeId: string; start: string; bookedAt: string };
export type ReturnRecord = { returnId: string; orderId: string; customerId: string; reason: string; status: "requested" | "received" | "refunded"; createdAt: string; labelUrl: string };
export type CustomerToken = { customerId: string; acr: "low" | "standard" | "high"; authTime: number; expiresAt: number };

export type Slot = { slotId: string; storeId: string; storeName: string; service: Service; start: string; end: string; available: boolean };

type Data = {
  orders: Order[];
  customers: Customer[];
  bookings: Booking[];
  returns: ReturnRecord[];
  operations: Operation[];
  idempotency: Record<string, IdempotencyRecord>;
  tokens: Record<string, CustomerToken>;
  counter: number;
};

function seed(): Data {
  return {
    orders: structuredClone(ORDERS),
    customers: structuredClone(CUSTOMERS),
    bookings: [],
    returns: [
      { returnId: "RT-2001", orderId: "SO-1004", customerId: "CUS-1001", reason: "Scarf colour not as pictured", status: "refunded", createdAt: "2026-11-15T10:00:00Z", labelUrl: "/returns/RT-2001/label" },
    ],
    operations: [],
    idempotency: {},
    tokens: {},
    counter: 0,
  };
}

export type StateOptions = { dbFile?: string; now: () => number; pendingMs: number };

export class ShopState {
  private data: Data;
  private readonly options: StateOptions;

  constructor(options: StateOptions) {
    this.options = options;
    this.data = options.dbFile && existsSync(options.dbFile) ? (JSON.parse(readFileSync(options.dbFile, "utf8")) as Data) : seed();
  }

  now(): number {
    return this.options.now();
  }

  /** Writes the state to the JSON file, if there is one (write then rename, so a crash never leaves half a file). */
  save(): void {
    if (!this.options.dbFile) return;
    const temp = `${this.options.dbFile}.tmp`;
    writeFileSync(temp, JSON.stringify(this.data));
    renameSync(temp, this.options.dbFile);
  }

  nextId(prefix: string): string {
    this.data.counter += 1;
    return `${prefix}${String(this.data.counter).padStart(4, "0")}`;
  }

  /** Finishes pending operations whose time has come. Called before every request is answered. */
  settle(): void {
    let changed = false;
    for (const operation of this.data.operations) {
      if (operation.status !== "pending" || operation.completesAt === undefined || operation.completesAt > this.now()) continue;
      operation.status = operation.completesAs ?? "applied";
      if (operation.kind === "cancel_order" && operation.status === "applied") {
        const order = this.order(operation.target);
        if (order) {
          this.markCancelled(order);
          // What a cancellation applied at once answers (refund and card), so a status check can show it too.
          operation.result = { orderId: order.id, status: "cancelled", refundAmount: order.total, currency: order.currency, refundCard: order.paymentCard, cancelledAt: order.cancelledAt };
        }
      }
      changed = true;
    }
    if (changed) this.save();
  }

  order(id: string): Order | undefined {
    return this.data.orders.find((order) => order.id === id);
  }
  ordersOf(customerId: string): Order[] {
    return this.data.orders.filter((order) => order.customerId === customerId);
  }
  customer(id: string): Customer | undefined {
    return this.data.customers.find((customer) => customer.id === id);
  }
  customerByEmail(email: string): Customer | undefined {
    return this.data.customers.find((customer) => customer.email.toLowerCase() === email.toLowerCase());
  }

  markCancelled(order: Order): void {
    order.status = "cancelled";
    order.cancelledAt = new Date(this.now()).toISOString();
  }

  addOperation(operation: Omit<Operation, "operationId" | "createdAt">): Operation {
    const full: Operation = { operationId: this.nextId("op_"), createdAt: new Date(this.now()).toISOString(), ...operation };
    this.data.operations.push(full);
    return full;
  }
  /** A pending operation that finishes after the configured delay. */
  addPending(kind: OperationKind, target: string, idempotencyKey: string | undefined, completesAs: "applied" | "not_applied", reason?: string): Operation {
    return this.addOperation({ kind, target, idempotencyKey, status: "pending", completesAt: this.now() + this.options.pendingMs, completesAs, ...(reason ? { reason } : {}) });
  }
  operation(id: string): Operation | undefined {
    return this.data.operations.find((operation) => operation.operationId === id);
  }
  operationByKey(key: string): Operation | undefined {
    return this.data.operations.find((operation) => operation.idempotencyKey === key);
  }

  idempotency(key: string): IdempotencyRecord | undefined {
    return this.data.idempotency[key];
  }
  remember(key: string, record: IdempotencyRecord): void {
    this.data.idempotency[key] = record;
  }
  forget(key: string): void {
    delete this.data.idempotency[key];
  }

  /** Appointment slots for the five days after today (UTC), in every store that offers appointments. */
  slots(filter: { storeId?: string; service?: Service }): Slot[] {
    const today = new Date(this.now());
    const base = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
    const slots: Slot[] = [];
    for (const store of STORES.slice(0, 3)) {
      if (filter.storeId && filter.storeId !== store.storeId) continue;
      for (const service of SERVICES) {
        if (filter.service && filter.service !== service) continue;
        for (let day = 1; day <= SLOT_DAYS; day++) {
          for (const hour of SLOT_HOURS) {
            const start = new Date(base + day * 86_400_000 + hour * 3_600_000);
            const slotId = slotIdOf(store.storeId, service, start);
            // Every third hour of a day is already booked, so "taken" can be shown without setup.
            const seededTaken = (day + hour) % 3 === 0;
            const booked = this.data.bookings.some((booking) => booking.slotId === slotId);
            slots.push({
              slotId,
              storeId: store.storeId,
              storeName: store.name,
              service,
              start: start.toISOString(),
              end: new Date(start.getTime() + 45 * 60_000).toISOString(),
              available: !seededTaken && !booked,
            });
          }
        }
      }
    }
    return slots;
  }
  slot(slotId: string): Slot | undefined {
    const parsed = /^SL-([A-Z0-9]+-[A-Z0-9]+)-([a-z]+)-(\d{8})T(\d{2})$/.exec(slotId);
    if (!parsed) return undefined;
    return this.slots({ storeId: parsed[1], service: parsed[2] as Service }).find((slot) => slot.slotId === slotId);
  }
  addBooking(booking: Booking): void {
    this.data.bookings.push(booking);
  }

  returns(filter: { orderId?: string; customerId?: string }): ReturnRecord[] {
    return this.data.returns.filter((entry) => (!filter.orderId || entry.orderId === filter.orderId) && (!filter.customerId || entry.customerId === filter.customerId));
  }
  addReturn(entry: ReturnRecord): void {
    this.data.returns.push(entry);
  }

  token(value: string): CustomerToken | undefined {
    const token = this.data.tokens[value];
    return token && token.expiresAt > this.now() ? token : undefined;
  }
  addToken(value: string, token: CustomerToken): void {
    this.data.tokens[value] = token;
  }
}

export function slotIdOf(storeId: string, service: string, start: Date): string {
  const day = start.toISOString().slice(0, 10).replaceAll("-", "");
  return `SL-${storeId}-${service}-${day}T${String(start.getUTCHours()).padStart(2, "0")}`;
}
