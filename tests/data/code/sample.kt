package com.example

import kotlin.math.sqrt

/** A 2D vector. */
data class Vec(val x: Double, val y: Double) {
    /** Its length. */
    fun length(): Double = sqrt(x * x + y * y)

    operator fun plus(
        other: Vec,
    ): Vec {
        return Vec(x + other.x, y + other.y)
    }

    companion object {
        val ZERO = Vec(0.0, 0.0)
    }
}

interface Shape {
    fun area(): Double
}

object Registry {
    private val items = mutableListOf<String>()

    fun register(name: String) {
        items.add("{$name}")
    }
}

enum class Color { RED, GREEN }

/** Top-level helper. */
fun helper(x: Int): Int {
    return x * 2
}

val answer = 42
