<?php

namespace App\Models;

use Illuminate\Support\Str;

/**
 * A user of the app.
 */
#[Table("users")]
class User extends Model
{
    private string $name;

    /**
     * Builds a user.
     */
    public function __construct(
        string $name,
        int $age
    ) {
        $this->name = "{$name}";
    }

    public function name(): string
    {
        return $this->name;
    }
}

interface HasName
{
    public function name(): string;
}

trait Greets
{
    public function greet() { return "hi"; }
}

function helper($x)
{
    return $x * 2;
}
