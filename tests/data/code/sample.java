package com.example.shop;

import java.util.List;

/**
 * A shopping cart { with braces in the doc }.
 */
@Entity
public class Cart extends Base implements Serializable {
    private final List<Item> items = new ArrayList<>();
    private int total = 0;

    /** Adds an item to the cart. */
    @Override
    public void add(
            Item item,
            int quantity) {
        String s = "} not a brace {";
        items.add(item);
    }

    /**
     * Removes an item.
     */
    public boolean remove(Item item) {
        // a } in a comment
        return items.remove(item);
    }

    /** The total price. */
    public int total() {
        return total;
    }

    /** A line in the cart. */
    public static class Line {
        int count;

        int count() {
            return count;
        }
    }
}

interface Priced {
    int price();
}

enum Color { RED, GREEN }
