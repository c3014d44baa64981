// The demo shop's seed data: customers, orders, stores, plans, products and help articles, the same on
// every start so that tests, fixtures and the demo can name them.

export type OrderStatus = "processing" | "shipped" | "delivered" | "cancelled";
/** How a cancellation of this order behaves, so every write outcome can be shown on purpose. */
export type CancelBehaviour = "immediate" | "pending" | "pending_refused" | "error" | "hang";

export type OrderItem = { sku: string; name: string; quantity: number; unitPrice: number };
export type Order = {
  id: string;
  customerId: string;
  status: OrderStatus;
  items: OrderItem[];
  total: number;
  currency: string;
  placedAt: string;
  /** The card the order was paid with, as the payment provider returns it (masked). */
  paymentCard: string;
  carrier?: string;
  trackingNumber?: string;
  cancelBehaviour: CancelBehaviour;
  cancelledAt?: string;
  notes: { at: string; text: string }[];
};

export type Address = { street: string; city: string; postalCode: string; country: string };
export type Customer = { id: string; name: string; email: string; phone: string; address: Address };

export type Store = {
  storeId: string;
  name: string;
  address: string;
  city: string;
  latitude: number;
  longitude: number;
  phone: string;
  opens: string;
  url: string;
};

export type Plan = {
  planId: string;
  name: string;
  monthlyPrice: number;
  deliveries: string;
  returnsWindowDays: number;
  support: string;
  badge: string;
  description: string;
};

export type Product = {
  productId: string;
  name: string;
  description: string;
  category: string;
  price: number;
  currency: string;
  badge: string;
  colour: string;
};

export type HelpArticle = { topic: string; title: string; summary: string; body: string[] };

export const CUSTOMERS: Customer[] = [
  {
    id: "CUS-1001",
    name: "Ana Novak",
    email: "ana.novak@example.com",
    phone: "+38640111222",
    address: { street: "Trubarjeva cesta 12", city: "Ljubljana", postalCode: "1000", country: "SI" },
  },
  {
    id: "CUS-1002",
    name: "Marko Kranjc",
    email: "marko.kranjc@example.com",
    phone: "+38641333444",
    address: { street: "Glavni trg 3", city: "Maribor", postalCode: "2000", country: "SI" },
  },
  {
    id: "CUS-1003",
    name: "Eva Zupan",
    email: "eva.zupan@example.com",
    phone: "+38631555666",
    address: { street: "Presernov trg 1", city: "Kranj", postalCode: "4000", country: "SI" },
  },
];

const item = (sku: string, name: string, quantity: number, unitPrice: number): OrderItem => ({ sku, name, quantity, unitPrice });
const order = (
  id: string,
  customerId: string,
  status: OrderStatus,
  items: OrderItem[],
  placedAt: string,
  paymentCard: string,
  cancelBehaviour: CancelBehaviour,
  shipping?: { carrier: string; trackingNumber: string },
): Order => ({
  id,
  customerId,
  status,
  items,
  total: Math.round(items.reduce((sum, line) => sum + line.quantity * line.unitPrice, 0) * 100) / 100,
  currency: "EUR",
  placedAt,
  paymentCard,
  ...(shipping ?? {}),
  cancelBehaviour,
  ...(status === "cancelled" ? { cancelledAt: "2026-11-20T09:12:00Z" } : {}),
  notes: [],
});

/**
 * Orders. Cancelling SO-1001 applies at once; SO-1002 is accepted and finishes later (pending);
 * SO-1003 is shipped and refused (409); SO-1007 is accepted and later refused by the warehouse;
 * SO-1009 answers 500 after applying the change; SO-1010 applies it and never answers (a hang).
 */
export const ORDERS: Order[] = [
  order("SO-1001", "CUS-1001", "processing", [item("TEE-BLK-M", "Organic cotton tee, black, M", 2, 19.9)], "2026-11-28T10:15:00Z", "**** **** **** 4242", "immediate"),
  order("SO-1002", "CUS-1001", "processing", [item("HOOD-GRY-L", "Merino hoodie, grey, L", 1, 89)], "2026-11-29T16:40:00Z", "**** **** **** 4242", "pending"),
  order("SO-1003", "CUS-1001", "shipped", [item("SNK-WHT-41", "Canvas sneakers, white, 41", 1, 64.5)], "2026-11-24T08:05:00Z", "**** **** **** 4242", "immediate", { carrier: "PostExpress", trackingNumber: "PX123456789SI" }),
  order("SO-1004", "CUS-1001", "delivered", [item("CAP-NVY", "Wool cap, navy", 1, 24), item("SCF-RED", "Scarf, red", 1, 29)], "2026-11-10T12:00:00Z", "**** **** **** 4242", "immediate", { carrier: "PostExpress", trackingNumber: "PX987654321SI" }),
  order("SO-1005", "CUS-1002", "processing", [item("JKT-OLV-M", "Rain jacket, olive, M", 1, 129)], "2026-11-30T09:30:00Z", "**** **** **** 1881", "immediate"),
  order("SO-1006", "CUS-1002", "cancelled", [item("SCK-3PK", "Socks, 3 pack", 2, 12)], "2026-11-18T14:20:00Z", "**** **** **** 1881", "immediate"),
  order("SO-1007", "CUS-1002", "processing", [item("BAG-TOTE", "Canvas tote bag", 3, 15)], "2026-11-30T18:45:00Z", "**** **** **** 1881", "pending_refused"),
  order("SO-1008", "CUS-1003", "shipped", [item("TEE-WHT-S", "Organic cotton tee, white, S", 1, 19.9)], "2026-11-26T11:11:00Z", "**** **** **** 0005", "immediate", { carrier: "PostExpress", trackingNumber: "PX555000111SI" }),
  order("SO-1009", "CUS-1003", "processing", [item("BLT-BRN", "Leather belt, brown", 1, 39)], "2026-12-01T07:50:00Z", "**** **** **** 0005", "error"),
  order("SO-1010", "CUS-1003", "processing", [item("GLV-BLK", "Knit gloves, black", 1, 22)], "2026-12-01T08:10:00Z", "**** **** **** 0005", "hang"),
];

export const STORES: Store[] = [
  { storeId: "ST-LJ1", name: "Caplo Shop Ljubljana Center", address: "Čopova ulica 5, 1000 Ljubljana", city: "Ljubljana", latitude: 46.0514, longitude: 14.5049, phone: "+38612345670", opens: "Mon-Sat 9:00-20:00", url: "/stores/ST-LJ1" },
  { storeId: "ST-LJ2", name: "Caplo Shop BTC", address: "Šmartinska cesta 152, 1000 Ljubljana", city: "Ljubljana", latitude: 46.0659, longitude: 14.5422, phone: "+38612345671", opens: "Mon-Sun 9:00-21:00", url: "/stores/ST-LJ2" },
  { storeId: "ST-MB1", name: "Caplo Shop Maribor", address: "Gosposka ulica 20, 2000 Maribor", city: "Maribor", latitude: 46.5582, longitude: 15.6457, phone: "+38622345672", opens: "Mon-Sat 9:00-19:00", url: "/stores/ST-MB1" },
  { storeId: "ST-KR1", name: "Caplo Shop Kranj", address: "Maistrov trg 8, 4000 Kranj", city: "Kranj", latitude: 46.2389, longitude: 14.3556, phone: "+38642345673", opens: "Mon-Fri 9:00-19:00", url: "/stores/ST-KR1" },
  { storeId: "ST-KP1", name: "Caplo Shop Koper", address: "Pristaniška ulica 2, 6000 Koper", city: "Koper", latitude: 45.5481, longitude: 13.7302, phone: "+38656345674", opens: "Mon-Sat 8:00-20:00", url: "/stores/ST-KP1" },
];

export const PLANS: Plan[] = [
  { planId: "basic", name: "Basic", monthlyPrice: 0, deliveries: "Standard, 3-5 days", returnsWindowDays: 14, support: "Email", badge: "Free", description: "Pay per delivery, returns within 14 days." },
  { planId: "plus", name: "Plus", monthlyPrice: 4.99, deliveries: "Free next-day", returnsWindowDays: 30, support: "Chat and email", badge: "Popular", description: "Free next-day delivery and 30-day returns." },
  { planId: "premium", name: "Premium", monthlyPrice: 9.99, deliveries: "Free same-day in cities", returnsWindowDays: 60, support: "Phone, chat and email", badge: "Best value", description: "Same-day delivery, 60-day returns and a personal stylist." },
];

export const PRODUCTS: Product[] = [
  { productId: "P-TEE-BLK", name: "Organic cotton tee", description: "Heavyweight organic cotton, black.", category: "tops", price: 19.9, currency: "EUR", badge: "Bestseller", colour: "#222222" },
  { productId: "P-HOOD-GRY", name: "Merino hoodie", description: "Soft merino wool, warm without bulk.", category: "tops", price: 89, currency: "EUR", badge: "New", colour: "#8a8f98" },
  { productId: "P-JKT-OLV", name: "Rain jacket", description: "Waterproof, breathable, packs into its pocket.", category: "outerwear", price: 129, currency: "EUR", badge: "Waterproof", colour: "#5b6b3a" },
  { productId: "P-SNK-WHT", name: "Canvas sneakers", description: "Classic low-top sneakers in white canvas.", category: "shoes", price: 64.5, currency: "EUR", badge: "Classic", colour: "#f2f2f2" },
  { productId: "P-CAP-NVY", name: "Wool cap", description: "Ribbed wool cap, navy.", category: "accessories", price: 24, currency: "EUR", badge: "Warm", colour: "#1f2a44" },
  { productId: "P-SCF-RED", name: "Scarf", description: "Lambswool scarf in a deep red.", category: "accessories", price: 29, currency: "EUR", badge: "Gift idea", colour: "#a3262a" },
  { productId: "P-BAG-TOTE", name: "Canvas tote bag", description: "Sturdy tote with an inner pocket.", category: "accessories", price: 15, currency: "EUR", badge: "Eco", colour: "#d9c7a3" },
  { productId: "P-GLV-BLK", name: "Knit gloves", description: "Touchscreen-friendly knit gloves.", category: "accessories", price: 22, currency: "GBP", badge: "UK import", colour: "#333333" },
];

export const HELP_ARTICLES: HelpArticle[] = [
  {
    topic: "returns",
    title: "Returns and refunds",
    summary: "How to return an item and when you get your money back.",
    body: [
      "You can return any item within the returns window of your plan (14 days on Basic, 30 on Plus, 60 on Premium).",
      "Start a return in chat or in your account, pack the item, and drop it at any PostExpress point with the label we send you.",
      "We refund to the card you paid with within 5 working days of receiving the parcel.",
    ],
  },
  {
    topic: "delivery",
    title: "Delivery times and costs",
    summary: "Where we deliver, how fast, and what it costs.",
    body: [
      "Standard delivery takes 3 to 5 working days within Slovenia and costs 3.90 EUR, free over 50 EUR.",
      "Plus and Premium members get free next-day delivery; Premium members get same-day delivery in Ljubljana and Maribor.",
    ],
  },
  {
    topic: "cancellations",
    title: "Cancelling an order",
    summary: "Orders can be cancelled until they ship.",
    body: [
      "An order can be cancelled while it is still processing. Once it has shipped, return it instead.",
      "Some cancellations need the warehouse to confirm; they are pending for a short while and we tell you when they finish.",
    ],
  },
];

export const SERVICES = ["fitting", "tailoring", "styling"] as const;
export type Service = (typeof SERVICES)[number];
/** Appointment hours offered each day in every store (UTC), 45 minutes each. */
export const SLOT_HOURS = [9, 11, 14, 16] as const;
export const SLOT_DAYS = 5;
